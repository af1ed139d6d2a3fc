#include "allocations.h"

#include "jvm_support.h"
#include "probes.h"
#include "threads.h"
#include "martini/core/log.h"

#include <algorithm>
#include <cstdio>

namespace martini::jvm {

// ---- Mode and sampling interval --------------------------------------------------------

void Allocations::Decide() {
    exact_ = Vm::Wants(EV_OBJECT_ALLOC) && samplingInterval_.load() == 0;
    decided_.store(true);
}

void Allocations::AddCapabilities(jvmtiCapabilities &caps) {
    if (Vm::Wants(EV_OBJECT_ALLOC) || Vm::Wants(EV_OBJECT_FREE)) {
        // Exact mode never enables SampledObjectAlloc: the allocation probes report.
        if (!exact_) caps.can_generate_sampled_object_alloc_events = 1;
        caps.can_tag_objects = 1;
    }
    if (Vm::Wants(EV_OBJECT_FREE)) caps.can_generate_object_free_events = 1;
}

void Allocations::CapabilitiesAdded() {
    if (Vm::Capabilities().can_generate_sampled_object_alloc_events) ApplySampling();
}

void Allocations::SetCallbacks(jvmtiEventCallbacks &callbacks) {
    callbacks.SampledObjectAlloc = OnSampledObjectAlloc;
    callbacks.ObjectFree = OnObjectFree;
}

void Allocations::OnDemand(TEventType event, bool wanted) {
    static constexpr Vm::EventSwitch kSampled[] = {{EV_OBJECT_ALLOC, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC}};
    static constexpr Vm::EventSwitch kFree[] = {{EV_OBJECT_FREE, JVMTI_EVENT_OBJECT_FREE}};
    // Exact mode: the allocation probes are in the code already; they check the demand.
    if (!exact_) Vm::Switch(kSampled, event, wanted);
    Vm::Switch(kFree, event, wanted);
}

TResult Allocations::SetSampling(unsigned bytes) {
    if (decided_.load()) {
        if (exact_) return MRTE_RESULT_OK;  // every allocation already
        if (bytes == 0) {
            core::LogLine("exact allocation mode (interval 0) must be asked for in MPICL_Instantiate; "
                          "the sampling interval stays as it is");
            return MRTE_ERROR_PHASE_FAILURE;
        }
    }
    samplingInterval_.store(bytes);
    if (samplingReady_.load()) ApplySampling();
    return MRTE_RESULT_OK;
}

void Allocations::ApplySampling() {
    samplingReady_.store(true);
    const long long bytes = samplingInterval_.load();
    if (bytes < 0) return;
    const jvmtiError e =
        Vm::Jvmti()->SetHeapSamplingInterval(static_cast<jint>(std::min<long long>(bytes, 0x7fffffff)));
    if (e != JVMTI_ERROR_NONE) {
        core::LogF("the JVM refused the allocation sampling interval %lld (JVMTI error %d)",
                     bytes, int(e));
    }
}

// ---- Sampled mode and ObjectFree -------------------------------------------------------------

void JNICALL Allocations::OnSampledObjectAlloc(jvmtiEnv *, JNIEnv *jni, jthread, jobject object, jclass klass,
                                               jlong size) {
    const TId classId = ClassRegistry::ClassIdOf(jni, klass);
    const ClientMask mask = ClassRegistry::InterestOf(classId, EG_HEAP);
    if (mask == 0) return;
    Raise(jni, object, classId, mask, static_cast<std::uint64_t>(size), false);
}

void JNICALL Allocations::OnObjectFree(jvmtiEnv *, jlong tag) {
    ObjectRecord record;
    {
        std::lock_guard lock(mutex_);
        auto it = objects_.find(static_cast<TId>(tag));
        if (it == objects_.end()) return;
        record = it->second;
        objects_.erase(it);
    }
    SObjectFreeEventData d;
    d.objectId = static_cast<TId>(tag);
    d.classId = record.classId;
    d.uiObjectSize = record.size;
    d.validData = DR_OBJECT_ID | DR_CLASS_ID | DR_OBJECT_SIZE;
    Vm::Core().Raise<IObjectFreeEventObserver>(d);
}

TResult Allocations::DescribeObject(TId id, core::ObjectFacts &f) {
    std::lock_guard lock(mutex_);
    auto it = objects_.find(id);
    if (it == objects_.end()) return MRTE_ERROR_ILLEGAL_ID;
    f.classId = it->second.classId;
    f.size = it->second.size;
    f.arrayInfo = it->second.arrayInfo;
    f.given = DR_CLASS_ID | DR_OBJECT_SIZE | DR_ARRAY_INFO;
    return MRTE_RESULT_OK;
}

// ---- Exact mode: choosing the probes ---------------------------------------------------------

AllocSelector Allocations::ClassSelector(ClassLoad &load) {
    if (!exact_) return {};
    // The heap filters are asked once per class that can have instances and has a
    // constructor (the rewriter decides which); its constructors get allocation probes
    // when some client wants the class.
    return [&load](const ClassDecl &decl) -> std::int64_t {
        load.Declare(decl);
        if (!load.instrumenting || load.classId == 0) return kNoProbe;
        // java.lang.Object is never probed (see Calls::Selector; it has no super() either).
        if (decl.internalName == "java/lang/Object") return kNoProbe;
        const ClientMask mask = ClassRegistry::InterestOf(load.classId, EG_HEAP);
        if (mask == 0) return kNoProbe;
        const std::int64_t probe = ProbeFor(load.classId, mask);
        if (probe != kNoProbe) load.allocProbe = static_cast<TId>(probe);
        return probe;
    };
}

ArraySelector Allocations::ArraysSelector(ClassLoad &load) {
    if (!exact_) return {};
    // The heap filters are asked about the class of the array each allocation
    // instruction creates ("int[]", "java.lang.String[]"; once per class); the site
    // gets a probe when some client wants it.
    return [&load](const ClassDecl &decl, const MethodDecl &m, const ArraySite &site) -> std::int64_t {
        const TId methodId = load.ProbeableMethod(decl, m);
        if (methodId == 0) return kNoProbe;
        const TId arrayClass = ClassRegistry::ArrayClassId(load.jni, load.loader, site.descriptor, site.arrayClass);
        const ClientMask mask = ClassRegistry::InterestOf(arrayClass, EG_HEAP);
        if (mask == 0) return kNoProbe;
        return ArraySiteFor(methodId, site.offset, arrayClass, mask, site.descriptor);
    };
}

std::int64_t Allocations::ProbeFor(TId classId, ClientMask heapInterest) {
    std::lock_guard lock(mutex_);
    TId &probe = probeByClass_[classId];
    if (probe == 0) {
        const TId id = allocs_.Add();
        if (id == 0) return kNoProbe;  // table full: the class's objects are not reported
        AllocRecord &a = *allocs_.Get(id);
        a.classId = classId;
        probe = id;
    }
    // Set again when the class is retransformed: after a detach, the next attach's
    // clients have their own filters.
    allocs_.Get(probe)->heapInterest = heapInterest;
    return static_cast<std::int64_t>(probe);
}

std::int64_t Allocations::ArraySiteFor(TId methodId, std::uint32_t offset, TId classId, ClientMask heapInterest,
                                       const std::string &descriptor) {
    std::lock_guard lock(mutex_);
    const auto key = std::make_pair(methodId, offset);
    TId id = 0;
    if (auto it = arraySiteByLocation_.find(key); it != arraySiteByLocation_.end()) {
        id = it->second;  // retransformed: the same site, the same id
    } else {
        id = arraySites_.Add();
        if (id == 0) return kNoProbe;  // table full: the site's arrays are not reported
        arraySiteByLocation_.emplace(key, id);
        ArraySiteRecord &r = *arraySites_.Get(id);
        r.methodId = methodId;
        r.offset = offset;
        r.classId.store(classId, std::memory_order_relaxed);
        // "[I": an int array; "[[I", "[Ljava/lang/String;": elements are objects.
        static const std::map<char, EObjectArrayType> kElement = {
            {'Z', OAT_BOOLEAN}, {'B', OAT_BYTE}, {'C', OAT_CHAR},  {'S', OAT_SHORT},
            {'I', OAT_INT},     {'J', OAT_LONG}, {'F', OAT_FLOAT}, {'D', OAT_DOUBLE}};
        const auto e = descriptor.size() == 2 ? kElement.find(descriptor[1]) : kElement.end();
        r.elementType = e != kElement.end() ? e->second : OAT_OBJECT;
    }
    arraySites_.Get(id)->heapInterest = heapInterest;
    return static_cast<std::int64_t>(id);
}

void Allocations::BindClass(JNIEnv *jni, TId allocProbe, jclass klass) {
    AllocRecord *a = allocs_.Get(allocProbe);
    if (a != nullptr && jni != nullptr && klass != nullptr && a->klass.load(std::memory_order_acquire) == nullptr) {
        a->klass.store(jni->NewWeakGlobalRef(klass), std::memory_order_release);
    }
}

void Allocations::BindPreparedClass(JNIEnv *jni, TId classId, jclass klass) {
    if (!exact_ || classId == 0) return;
    TId probe = 0;
    {
        std::lock_guard lock(mutex_);
        if (auto it = probeByClass_.find(classId); it != probeByClass_.end()) probe = it->second;
    }
    BindClass(jni, probe, klass);
}

void Allocations::FindProbeMethods(JNIEnv *jni, jclass probes) {
    for (const ProbeMethod &m : kProbeMethods) {
        if (!m.allocationFrame) continue;
        if (jmethodID id = jni->GetStaticMethodID(probes, m.name.data(), m.descriptor.data())) {
            probeMethods_.push_back(id);
        }
        jni->ExceptionClear();
    }
}

// ---- Exact mode: the probes -------------------------------------------------------------------

void JNICALL Allocations::Allocated(JNIEnv *jni, jclass, jobject object, jint allocProbe) noexcept {
    Report(jni, object, allocProbe, false);
}

void JNICALL Allocations::AllocatedByClassId(JNIEnv *jni, jclass, jobject object, jint allocProbe) noexcept {
    Report(jni, object, allocProbe, true);
}

void Allocations::Report(JNIEnv *jni, jobject object, std::int32_t allocProbe, bool checkClass) {
    if (Vm::Dead() || object == nullptr) return;  // after VmShutdown
    if (!Vm::Core().IsEnabled(EV_OBJECT_ALLOC)) return;
    const AllocRecord *a = allocs_.Get(static_cast<TId>(allocProbe));
    if (a == nullptr) return;
    if (checkClass) {
        // Only the most-derived class's constructor reports the object.
        jweak klass = a->klass.load(std::memory_order_acquire);
        if (klass == nullptr) return;
        jclass actual = jni->GetObjectClass(object);
        const bool same = jni->IsSameObject(actual, klass);
        jni->DeleteLocalRef(actual);
        if (!same) return;
    }
    jlong size = 0;
    if (Vm::Jvmti()->GetObjectSize(object, &size) != JVMTI_ERROR_NONE) size = 0;
    Raise(jni, object, a->classId, a->heapInterest, static_cast<std::uint64_t>(size), true);
}

void JNICALL Allocations::AllocatedArray(JNIEnv *jni, jclass, jobject array, jint site) noexcept {
    if (Vm::Dead() || array == nullptr) return;  // after VmShutdown
    if (!Vm::Core().IsEnabled(EV_OBJECT_ALLOC)) return;
    ArraySiteRecord *a = arraySites_.Get(static_cast<TId>(site));
    if (a == nullptr) return;
    TId classId = a->classId.load(std::memory_order_relaxed);
    if (!a->classChecked.load(std::memory_order_acquire)) {
        // Once per site: the class id assumed at instrumentation against the array's
        // actual class (its element class's loader may differ from the one assumed).
        jclass klass = jni->GetObjectClass(array);
        if (const TId actual = ClassRegistry::ClassIdOf(jni, klass); actual != 0) classId = actual;
        jni->DeleteLocalRef(klass);
        a->classId.store(classId, std::memory_order_relaxed);
        a->classChecked.store(true, std::memory_order_release);
    }
    jlong size = 0;
    if (Vm::Jvmti()->GetObjectSize(array, &size) != JVMTI_ERROR_NONE) size = 0;
    SArrayInfo info;
    info.arrayType = a->elementType;
    info.uiNumElements = static_cast<unsigned>(jni->GetArrayLength(static_cast<jarray>(array)));
    Raise(jni, array, classId, a->heapInterest, static_cast<std::uint64_t>(size), true, &info);
}

// ---- ObjectAlloc ----------------------------------------------------------------------------------

void Allocations::Raise(JNIEnv *jni, jobject object, TId classId, ClientMask mask, std::uint64_t size,
                        bool fromProbe, const SArrayInfo *array) {
    const BitSet wanted = Vm::Core().RequestedData(EV_OBJECT_ALLOC);
    SObjectAllocEventData d;
    d.threadId = Threads::Current(jni).id;
    d.classId = classId;
    d.uiObjectSize = size;
    d.validData = DR_THREAD_ID | DR_CLASS_ID | DR_OBJECT_SIZE;
    // The object's id is a JVMTI tag: set (a tag-map entry for the object's life) only
    // when some client asks for object ids or observes ObjectFree.
    const bool frees = Vm::Wants(EV_OBJECT_FREE);
    if ((wanted & DR_OBJECT_ID) || frees) {
        d.objectId = Vm::TagOf(object, true);
        if (d.objectId != 0) d.validData |= DR_OBJECT_ID;
    }
    // The record answers GetObjectInfo and ObjectFree. In exact mode it is kept only
    // when some client observes ObjectFree, which removes it: otherwise every object
    // ever allocated would stay in the table.
    if (d.objectId != 0 && (!fromProbe || frees)) {
        std::lock_guard lock(mutex_);
        objects_[d.objectId] = {classId, d.uiObjectSize, array != nullptr ? *array : SArrayInfo{}};
    }
    if (array != nullptr && (wanted & DR_ARRAY_INFO)) {
        d.arrayInfo = *array;
        d.validData |= DR_ARRAY_INFO;
    }
    std::vector<SStackEntry> stack;
    FillStack(d, fromProbe, stack);
    Vm::Core().Raise<IObjectAllocEventObserver>(d, mask);
}

void Allocations::FillStack(SObjectAllocEventData &d, bool fromProbe, std::vector<SStackEntry> &stack) {
    const BitSet wanted = Vm::Core().RequestedData(EV_OBJECT_ALLOC);
    if (fromProbe && (wanted & (DR_VM_CALL_STACK | DR_ALLOC_LOCATION))) {
        // The frames above the allocating method (probes, constructors) are at most a
        // handful unless constructors delegate deeply; 32 leave room for that.
        stack = AllocatingStack(d.classId, (wanted & DR_VM_CALL_STACK) ? 4096 : 32);
        if (!stack.empty() && (wanted & DR_ALLOC_LOCATION)) {
            d.allocMethodId = stack[0].methodId;
            d.uiAllocLocation = stack[0].uiLocation;
            d.validData |= DR_ALLOC_LOCATION;
        }
        if (!(wanted & DR_VM_CALL_STACK)) {
            stack.clear();
        } else if (!stack.empty()) {
            d.validData |= DR_VM_CALL_STACK;
        }
    } else if (!fromProbe && (wanted & DR_VM_CALL_STACK)) {
        // SampledObjectAlloc is posted in the allocating method itself.
        core::ThreadFacts t;
        if (Threads::Describe(d.threadId, DR_VM_CALL_STACK, 0, t) == MRTE_RESULT_OK && (t.given & DR_VM_CALL_STACK)) {
            stack = std::move(t.stack);
            d.validData |= DR_VM_CALL_STACK;
        }
    }
    if (d.validData & DR_VM_CALL_STACK) {
        d.stackTrace.entries = stack.data();
        d.stackTrace.uiSize = d.stackTrace.uiActualSize = static_cast<unsigned>(stack.size());
    }
}

std::vector<SStackEntry> Allocations::AllocatingStack(TId classId, jint maxFrames) {
    thread_local std::vector<jvmtiFrameInfo> frames;
    frames.resize(static_cast<std::size_t>(maxFrames));
    jint count = 0;
    std::vector<SStackEntry> out;
    if (Vm::Jvmti()->GetStackTrace(nullptr, 0, maxFrames, frames.data(), &count) != JVMTI_ERROR_NONE) return out;
    jint i = 0;
    auto frame = [&](jint k) -> const jvmtiFrameInfo & { return frames[static_cast<std::size_t>(k)]; };
    // Probes.allocated (native) and Probes.alloc, or Probes.allocByClassId.
    while (i < count && std::find(probeMethods_.begin(), probeMethods_.end(), frame(i).method) != probeMethods_.end()) {
        ++i;
    }
    // The constructor that reported: the most-derived class's, which called super().
    if (i < count && ClassRegistry::IsConstructorOf(ClassRegistry::MethodIdOf(frame(i).method), classId)) {
        ++i;
        // Constructors of the same class that reached it with this(...): each stopped at
        // its delegation call. (A constructor of the class stopped anywhere else is
        // allocating another object of its class: that frame is the allocating method.)
        for (; i < count; ++i) {
            const TId mid = ClassRegistry::MethodIdOf(frame(i).method);
            const MethodRecord *m = ClassRegistry::Method(mid);
            if (m == nullptr || !ClassRegistry::IsConstructorOf(mid, classId)) break;
            const std::int32_t bci = m->delegationBci.load(std::memory_order_relaxed);
            if (bci < 0 || frame(i).location != bci) break;
        }
    }
    ClassRegistry::AppendFrames(frames.data() + i, count - i, out);
    return out;
}

}  // namespace martini::jvm
