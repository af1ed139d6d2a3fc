// The JVM provider: allocation events, sampled (JVMTI) or exact (constructor and
// array probes).
#include "jvm_provider.h"
#include "jvm_support.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

namespace martini::jvm {

// ---- Exact allocation mode -------------------------------------------------------------

std::int64_t JvmProvider::AllocProbeFor(TId classId, ClientMask heapInterest) {
    std::lock_guard lock(mutex_);
    if (classId == 0 || classId > classes_.size()) return kNoProbe;
    ClassRecord &cls = *classes_[classId - 1];
    if (cls.allocProbe == 0) {
        const TId id = allocs_.Add();
        if (id == 0) return kNoProbe;  // table full: the class's objects are not reported
        AllocRecord &a = *allocs_.Get(id);
        a.classId = classId;
        a.heapInterest = heapInterest;
        cls.allocProbe = id;
    }
    return static_cast<std::int64_t>(cls.allocProbe);
}

void JvmProvider::Allocated(JNIEnv *jni, jobject object, std::int32_t allocProbe, bool checkClass) noexcept {
    if (dead_.load(std::memory_order_relaxed) || object == nullptr) return;  // after VmShutdown
    if (!core_->IsEnabled(EV_OBJECT_ALLOC)) return;
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
    if (jvmti_->GetObjectSize(object, &size) != JVMTI_ERROR_NONE) size = 0;
    RaiseObjectAlloc(jni, object, a->classId, a->heapInterest, static_cast<std::uint64_t>(size), true);
}

TId JvmProvider::ArrayClassIdFor(JNIEnv *jni, jobject loader, const std::string &descriptor,
                                  const std::string &sourceName) {
    // An array class's loader is its element class's: the bootstrap loader for
    // primitive elements; assumed so for java.* elements, and the loader of the class
    // being loaded otherwise (AllocatedArray checks it against the first array).
    const std::size_t dims = descriptor.find_first_not_of('[');
    const bool boot = dims == std::string::npos || descriptor[dims] != 'L' ||
                      descriptor.compare(dims, 6, "Ljava/") == 0;
    std::lock_guard lock(mutex_);
    const std::string key = ClassKey(jni, boot ? nullptr : loader, descriptor);
    if (auto c = classByKey_.find(key); c != classByKey_.end()) return c->second;
    auto cls = std::make_unique<ClassRecord>();
    cls->internalName = descriptor;
    cls->name = sourceName;
    classes_.push_back(std::move(cls));
    classByKey_.emplace(key, classes_.size());
    return classes_.size();
}

std::int64_t JvmProvider::ArraySiteFor(TId methodId, std::uint32_t offset, TId classId, ClientMask heapInterest,
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

void JvmProvider::AllocatedArray(JNIEnv *jni, jobject array, std::int32_t site) noexcept {
    if (dead_.load(std::memory_order_relaxed) || array == nullptr) return;  // after VmShutdown
    if (!core_->IsEnabled(EV_OBJECT_ALLOC)) return;
    ArraySiteRecord *a = arraySites_.Get(static_cast<TId>(site));
    if (a == nullptr) return;
    TId classId = a->classId.load(std::memory_order_relaxed);
    if (!a->classChecked.load(std::memory_order_acquire)) {
        // Once per site: the class id assumed at instrumentation against the array's
        // actual class (its element class's loader may differ from the one assumed).
        jclass klass = jni->GetObjectClass(array);
        if (const TId actual = ClassIdOf(jni, klass); actual != 0) classId = actual;
        jni->DeleteLocalRef(klass);
        a->classId.store(classId, std::memory_order_relaxed);
        a->classChecked.store(true, std::memory_order_release);
    }
    jlong size = 0;
    if (jvmti_->GetObjectSize(array, &size) != JVMTI_ERROR_NONE) size = 0;
    SArrayInfo info;
    info.arrayType = a->elementType;
    info.uiNumElements = static_cast<unsigned>(jni->GetArrayLength(static_cast<jarray>(array)));
    RaiseObjectAlloc(jni, array, classId, a->heapInterest, static_cast<std::uint64_t>(size), true, &info);
}

void JvmProvider::RaiseObjectAlloc(JNIEnv *jni, jobject object, TId classId, ClientMask mask, std::uint64_t size,
                                   bool fromProbe, const SArrayInfo *array) {
    const BitSet wanted = core_->RequestedData(EV_OBJECT_ALLOC);
    SObjectAllocEventData d;
    d.threadId = ContextOf(jni).id;
    d.classId = classId;
    d.uiObjectSize = size;
    d.validData = DR_THREAD_ID | DR_CLASS_ID | DR_OBJECT_SIZE;
    // The object's id is a JVMTI tag: set (a tag-map entry for the object's life) only
    // when some client asks for object ids or observes ObjectFree.
    const bool frees = core_->HasObservers(EV_OBJECT_FREE);
    if ((wanted & DR_OBJECT_ID) || frees) {
        d.objectId = TagOf(jni, object, true);
        if (d.objectId != 0) d.validData |= DR_OBJECT_ID;
    }
    // The record answers GetObjectInfo and ObjectFree. In exact mode it is kept only
    // when some client observes ObjectFree, which removes it: otherwise every object
    // ever allocated would stay in the table.
    if (d.objectId != 0 && (!fromProbe || frees)) {
        RememberObject(d.objectId, {classId, d.uiObjectSize, array != nullptr ? *array : SArrayInfo{}});
    }
    if (array != nullptr && (wanted & DR_ARRAY_INFO)) {
        d.arrayInfo = *array;
        d.validData |= DR_ARRAY_INFO;
    }
    std::vector<SStackEntry> stack;
    if (fromProbe && (wanted & (DR_VM_CALL_STACK | DR_ALLOC_LOCATION))) {
        // The frames above the allocating method (probes, constructors) are at most a
        // handful unless constructors delegate deeply; 32 leave room for that.
        stack = AllocatingStack(classId, (wanted & DR_VM_CALL_STACK) ? 4096 : 32);
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
        if (DescribeThread(d.threadId, DR_VM_CALL_STACK, 0, t) == MRTE_RESULT_OK && (t.given & DR_VM_CALL_STACK)) {
            stack = std::move(t.stack);
            d.validData |= DR_VM_CALL_STACK;
        }
    }
    if (d.validData & DR_VM_CALL_STACK) {
        d.stackTrace.entries = stack.data();
        d.stackTrace.uiSize = d.stackTrace.uiActualSize = static_cast<unsigned>(stack.size());
    }
    core_->Raise<IObjectAllocEventObserver>(d, mask);
}

bool JvmProvider::IsConstructorOf(TId methodId, TId classId) {
    const MethodRecord *m = methods_.Get(methodId);
    if (m == nullptr || m->name != "<init>") return false;
    if (m->classId == classId) return true;
    // A method declared from JVMTI (its jmethodID was never bound to the record made at
    // ClassFileLoadHook) has a class record of its own: compare the names.
    std::lock_guard lock(mutex_);
    if (m->classId == 0 || m->classId > classes_.size() || classId == 0 || classId > classes_.size()) return false;
    return classes_[m->classId - 1]->internalName == classes_[classId - 1]->internalName;
}

std::vector<SStackEntry> JvmProvider::AllocatingStack(TId classId, jint maxFrames) {
    thread_local std::vector<jvmtiFrameInfo> frames;
    frames.resize(static_cast<std::size_t>(maxFrames));
    jint count = 0;
    std::vector<SStackEntry> out;
    if (jvmti_->GetStackTrace(nullptr, 0, maxFrames, frames.data(), &count) != JVMTI_ERROR_NONE) return out;
    jint i = 0;
    // Probes.allocated (native) and Probes.alloc, or Probes.allocByClassId.
    while (i < count && std::find(probeMethods_.begin(), probeMethods_.end(), frames[static_cast<std::size_t>(i)].method) !=
                            probeMethods_.end()) {
        ++i;
    }
    // The constructor that reported: the most-derived class's, which called super().
    if (i < count && IsConstructorOf(MethodIdOf(frames[static_cast<std::size_t>(i)].method), classId)) {
        ++i;
        // Constructors of the same class that reached it with this(...): each stopped at
        // its delegation call. (A constructor of the class stopped anywhere else is
        // allocating another object of its class: that frame is the allocating method.)
        while (i < count) {
            const jvmtiFrameInfo &f = frames[static_cast<std::size_t>(i)];
            const TId mid = MethodIdOf(f.method);
            const MethodRecord *m = methods_.Get(mid);
            if (m == nullptr || !IsConstructorOf(mid, classId)) break;
            const std::int32_t bci = m->delegationBci.load(std::memory_order_relaxed);
            if (bci < 0 || f.location != bci) break;
            ++i;
        }
    }
    AppendFrames(frames.data() + i, count - i, out);
    return out;
}

void JvmProvider::AppendFrames(const jvmtiFrameInfo *frames, jint count, std::vector<SStackEntry> &out) {
    for (jint i = 0; i < count; ++i) {
        const TId mid = MethodIdOf(frames[i].method);
        const MethodRecord *m = methods_.Get(mid);
        const auto loc = static_cast<std::uint32_t>(frames[i].location);
        out.push_back({mid, frames[i].location < 0 ? ~0u : loc, m ? LineAt(m->lines, loc) : 0u});
    }
}

TResult JvmProvider::SetAllocationSampling(unsigned bytes) noexcept {
    if (allocationModeDecided_.load()) {
        if (exactAllocations_) return MRTE_RESULT_OK;  // every allocation already
        if (bytes == 0) {
            std::fprintf(stderr,
                         "martini: exact allocation mode (interval 0) must be asked for in MPICL_Instantiate; "
                         "the sampling interval stays as it is\n");
            return MRTE_ERROR_PHASE_FAILURE;
        }
    }
    samplingInterval_.store(bytes);
    if (samplingReady_.load()) ApplyAllocationSampling();
    return MRTE_RESULT_OK;
}

bool JvmProvider::DecideAllocationMode(bool allocationsWanted) noexcept {
    exactAllocations_ = allocationsWanted && samplingInterval_.load() == 0;
    allocationModeDecided_.store(true);
    return exactAllocations_;
}

void JvmProvider::ApplyAllocationSampling() noexcept {
    samplingReady_.store(true);
    const long long bytes = samplingInterval_.load();
    if (bytes < 0) return;
    const jvmtiError e = jvmti_->SetHeapSamplingInterval(static_cast<jint>(std::min<long long>(bytes, 0x7fffffff)));
    if (e != JVMTI_ERROR_NONE) {
        std::fprintf(stderr, "martini: the JVM refused the allocation sampling interval %lld (JVMTI error %d)\n", bytes, int(e));
    }
}

}  // namespace martini::jvm
