#include "jvm_provider.h"

#include "martini/core/clock.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>

namespace martini::jvm {

using namespace Martini::MPI;

JvmProvider *gProvider = nullptr;

namespace {

constexpr std::uint8_t kInvokespecialOp = 0xb7;

// The calling thread's context; set on its first probe or at ThreadStart, cleared at
// ThreadEnd. Initial-exec: one TLS load on the probes' path.
constinit thread_local ThreadContext *tContext __attribute__((tls_model("initial-exec"))) = nullptr;

// DR_CPU_TIMESTAMP: the core's calibrated TSC clock (see Load in agent.cpp).
std::uint64_t NowNs() { return core::Clock::NowNs(); }

// The clock items of a call event, computed only when some client asked for them.
template <class Data>
void FillTimes(Data &d, BitSet wanted, jvmtiEnv *jvmti) {
    if (wanted & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    if (wanted & DR_THREAD_CPU_TIME) {
        jlong cpu = 0;
        if (jvmti->GetCurrentThreadCpuTime(&cpu) == JVMTI_ERROR_NONE) {
            d.uiThreadCpuTime = static_cast<std::uint64_t>(cpu);
            d.validData |= DR_THREAD_CPU_TIME;
        }
    }
}

std::string SourceName(std::string internalName) {
    std::replace(internalName.begin(), internalName.end(), '/', '.');
    return internalName;
}

// "Ljava/lang/String;" -> "java/lang/String"; arrays keep their descriptor.
std::string InternalFromSignature(const char *sig) {
    std::string s(sig ? sig : "");
    if (s.size() > 2 && s.front() == 'L' && s.back() == ';') return s.substr(1, s.size() - 2);
    return s;
}

// JVMTI strings are the JVM's to free.
struct JvmtiString {
    jvmtiEnv *env;
    char *p = nullptr;
    explicit JvmtiString(jvmtiEnv *e) : env(e) {}
    ~JvmtiString() {
        if (p) env->Deallocate(reinterpret_cast<unsigned char *>(p));
    }
    std::string str() const { return p ? p : ""; }
};

EMethodAccessType AccessType(std::uint16_t classAccess, std::uint16_t methodAccess) {
    if (methodAccess & kAccPrivate) return MAT_CLASS_INTERNAL;
    // Public and protected members of a public class are what other packages see.
    if ((classAccess & kAccPublic) && (methodAccess & (kAccPublic | kAccProtected))) return MAT_PACKAGE_API;
    return MAT_PACKAGE_INTERNAL;
}

unsigned LineAt(const std::vector<LineEntry> &lines, std::uint32_t location) {
    unsigned line = 0;
    for (const auto &e : lines) {
        if (e.offset > location) break;
        line = e.line;
    }
    return line;
}

EThreadState StateFromJvmti(jint s) {
    if (s & JVMTI_THREAD_STATE_TERMINATED) return TS_TERMINATED;
    if (!(s & JVMTI_THREAD_STATE_ALIVE)) return TS_NEW;
    if (s & JVMTI_THREAD_STATE_SUSPENDED) return TS_SUSPENDED;
    if (s & JVMTI_THREAD_STATE_BLOCKED_ON_MONITOR_ENTER) return TS_BLOCKED;
    if (s & JVMTI_THREAD_STATE_WAITING_WITH_TIMEOUT) return TS_TIMED_WAITING;
    if (s & JVMTI_THREAD_STATE_WAITING_INDEFINITELY) return TS_WAITING;
    return TS_RUNNING;
}

}  // namespace

// ---- core::Provider ------------------------------------------------------------------

core::RuntimeDescription JvmProvider::Describe() const {
    core::RuntimeDescription d{RT_JVM, "Java Virtual Machine", ""};
    JNIEnv *jni = nullptr;
    if (vm_->GetEnv(reinterpret_cast<void **>(&jni), JNI_VERSION_1_8) != JNI_OK || jni == nullptr) return d;
    auto property = [&](const char *key) {
        JvmtiString value(jvmti_);
        return jvmti_->GetSystemProperty(key, &value.p) == JVMTI_ERROR_NONE ? value.str() : std::string();
    };
    d.name = property("java.vm.name");
    d.version = property("java.vm.version");
    return d;
}

bool JvmProvider::CanRaise(TEventType event) const noexcept {
    switch (event) {
        case EV_VM_INIT: case EV_VM_SHUTDOWN: case EV_CLASS_LOAD: case EV_NEW_METHOD:
        case EV_METHOD_ENTER: case EV_METHOD_LEAVE: case EV_THREAD_START: case EV_THREAD_END:
        case EV_GC_START: case EV_GC_END: case EV_OBJECT_ALLOC: case EV_OBJECT_FREE:
        case EV_MONITOR_WAIT: case EV_MONITOR_WAITED: case EV_CONTENDED_MONITOR_ENTER:
        case EV_CONTENDED_MONITOR_ENTERED: case EV_JITTED_METHOD_LOADED: case EV_JITTED_METHOD_UNLOADED:
        case EV_DYNAMIC_CODE_GENERATED: case EV_EC_SET_OUTPUT_DIRECTORY: case EV_EC_START: case EV_EC_STOP: case EV_THREAD_INTERACTION:
            return true;
        default:
            return false;  // not yet: modules, moved references, sampling
    }
}

void JvmProvider::OnEventDemandChanged(TEventType event, bool wanted) noexcept {
    // Events only clients need are switched on and off with their demand, so a
    // disabled group costs the JVM nothing. (Capabilities were added in Agent_OnLoad.)
    const jvmtiEventMode mode = wanted ? JVMTI_ENABLE : JVMTI_DISABLE;
    auto set = [&](jvmtiEvent e) { jvmti_->SetEventNotificationMode(mode, e, nullptr); };
    switch (event) {
        case EV_GC_START: set(JVMTI_EVENT_GARBAGE_COLLECTION_START); break;
        case EV_GC_END: set(JVMTI_EVENT_GARBAGE_COLLECTION_FINISH); break;
        case EV_OBJECT_ALLOC:
            // Exact mode: the allocation probes are in the code already; Allocated
            // checks the demand.
            if (!exactAllocations_) set(JVMTI_EVENT_SAMPLED_OBJECT_ALLOC);
            break;
        case EV_OBJECT_FREE: set(JVMTI_EVENT_OBJECT_FREE); break;
        case EV_MONITOR_WAIT: set(JVMTI_EVENT_MONITOR_WAIT); break;
        case EV_MONITOR_WAITED: set(JVMTI_EVENT_MONITOR_WAITED); break;
        case EV_CONTENDED_MONITOR_ENTER: set(JVMTI_EVENT_MONITOR_CONTENDED_ENTER); break;
        case EV_CONTENDED_MONITOR_ENTERED: set(JVMTI_EVENT_MONITOR_CONTENDED_ENTERED); break;
        case EV_JITTED_METHOD_LOADED: set(JVMTI_EVENT_COMPILED_METHOD_LOAD); break;
        case EV_JITTED_METHOD_UNLOADED: set(JVMTI_EVENT_COMPILED_METHOD_UNLOAD); break;
        case EV_DYNAMIC_CODE_GENERATED: set(JVMTI_EVENT_DYNAMIC_CODE_GENERATED); break;
        default: break;  // lifecycle, classes, threads: the agent needs them itself
    }
}

// ---- Classes and methods ---------------------------------------------------------------

std::string JvmProvider::ClassKey(JNIEnv *jni, jobject loader, const std::string &internalName) {
    std::size_t index = 0;  // 0: the bootstrap loader
    if (loader != nullptr && jni != nullptr) {
        for (std::size_t i = 0; i < loaders_.size(); ++i) {
            if (jni->IsSameObject(loader, loaders_[i])) {
                index = i + 1;
                break;
            }
        }
        if (index == 0) {
            loaders_.push_back(jni->NewWeakGlobalRef(loader));
            index = loaders_.size();
        }
    }
    return std::to_string(index) + "/" + internalName;
}

std::vector<std::uint8_t> JvmProvider::OnClassFile(JNIEnv *jni, jobject loader, const char *name,
                                                   std::span<const std::uint8_t> bytes, jclass redefined) {
    const bool redefining = redefined != nullptr;
    // The probes' own package is never probed.
    if (name == nullptr || std::strncmp(name, "martini/runtime/", 16) == 0) return {};
    stats_.classesSeen.fetch_add(1, std::memory_order_relaxed);
    const bool instrumenting = instrumenting_.load(std::memory_order_acquire);
    TId classId = 0;
    bool newClass = false;
    std::vector<TId> ids;  // per method of the declaration
    bool declared = false;
    auto declare = [&](const ClassDecl &decl) {
        if (declared) return;
        declared = true;
        std::lock_guard lock(mutex_);
        const std::string key = ClassKey(jni, loader, decl.internalName);
        auto found = classByKey_.find(key);
        if (found == classByKey_.end()) {
            auto cls = std::make_unique<ClassRecord>();
            cls->internalName = decl.internalName;
            cls->name = SourceName(decl.internalName);
            cls->sourceFile = decl.sourceFile;
            cls->access = decl.accessFlags;
            classes_.push_back(std::move(cls));
            classId = classes_.size();
            classByKey_.emplace(key, classId);
            newClass = true;
        } else {
            classId = found->second;
        }
        ClassRecord &cls = *classes_[classId - 1];
        ids.assign(decl.methods.size(), 0);
        for (std::size_t i = 0; i < decl.methods.size(); ++i) {
            const MethodDecl &m = decl.methods[i];
            // A class seen again (retransformed, or defined again by its loader) keeps its ids.
            for (TId existing : cls.methods) {
                const MethodRecord *r = methods_.Get(existing);
                if (r && r->name == m.name && r->descriptor == m.descriptor) ids[i] = existing;
            }
            if (ids[i] == 0) {
                const TId id = methods_.Add();
                if (id == 0) continue;  // table full: the method is not tracked
                MethodRecord &r = *methods_.Get(id);
                r.classId = classId;
                r.name = m.name;
                r.descriptor = m.descriptor;
                r.access = m.accessFlags;
                r.hasCode = m.hasCode;
                r.lines = m.lines;
                cls.methods.push_back(id);
                ids[i] = id;
            }
        }
    };
    auto select = [&](const ClassDecl &decl, const MethodDecl &m) -> std::int64_t {
        declare(decl);
        const auto i = static_cast<std::size_t>(&m - decl.methods.data());
        MethodRecord *r = i < ids.size() ? methods_.Get(ids[i]) : nullptr;
        if (r == nullptr || !instrumenting) return kNoProbe;
        // java.lang.Object is never probed: HotSpot treats Object.<init> specially (C2
        // crashes compiling it with a handler added), and every `new` runs it.
        if (decl.internalName == "java/lang/Object") return kNoProbe;
        // Instrumentation time for the call graph: each client's filter is asked once
        // per method (the core caches the answer by id).
        const std::string className = SourceName(decl.internalName);
        SCallGraphFilterData data{className.c_str(), m.name.c_str(), m.descriptor.c_str(),
                                  AccessType(decl.accessFlags, m.accessFlags)};
        r->callGraph = core_->CallGraphInterest(ids[i], data);
        return r->callGraph != 0 ? static_cast<std::int64_t>(ids[i]) : kNoProbe;
    };
    // Exact allocation mode: the heap filters are asked once per class that can have
    // instances and has a constructor (the rewriter decides which), and its
    // constructors get allocation probes when some client wants the class.
    TId allocProbe = 0;
    auto selectAlloc = [&](const ClassDecl &decl) -> std::int64_t {
        declare(decl);
        if (!instrumenting || classId == 0) return kNoProbe;
        // java.lang.Object is never probed (see above; it has no super() either).
        if (decl.internalName == "java/lang/Object") return kNoProbe;
        const ClientMask mask = InterestOf(classId, EG_HEAP);
        if (mask == 0) return kNoProbe;
        const std::int64_t probe = AllocProbeFor(classId, mask);
        if (probe != kNoProbe) allocProbe = static_cast<TId>(probe);
        return probe;
    };
    // Thread interactions: the filters are asked once per method containing a
    // candidate call site; its sites get probes when some client wants the method, or
    // (Thread.start() sites) when some client wants thread parents.
    std::map<std::size_t, ClientMask> interestByMethod;  // method index -> mask
    auto selectSite = [&](const ClassDecl &decl, const MethodDecl &m, const CallSite &site) -> std::int64_t {
        declare(decl);
        const auto i = static_cast<std::size_t>(&m - decl.methods.data());
        if (!instrumenting || i >= ids.size() || methods_.Get(ids[i]) == nullptr) return kNoProbe;
        // java.lang.Thread's own methods call each other (join() -> join(0), sleep(ms,
        // ns) -> sleep(ms)): one interaction each, reported at the caller's site.
        if (decl.internalName == "java/lang/Thread" || decl.internalName == "java/lang/Object") return kNoProbe;
        auto known = interestByMethod.find(i);
        if (known == interestByMethod.end()) {
            ClientMask mask = 0;
            if (interactions_) {
                const std::string className = SourceName(decl.internalName);
                SThreadInteractionFilterData data{className.c_str(), m.name.c_str(), m.descriptor.c_str()};
                mask = core_->ThreadInteractionInterest(ids[i], data);
            }
            known = interestByMethod.emplace(i, mask).first;
        }
        const bool parent = parents_ && site.kind == Interaction::kStart;
        if (known->second == 0 && !parent) return kNoProbe;
        return SiteProbeFor(ids[i], site, known->second);
    };
    // Exact allocation mode, arrays: the heap filters are asked about the class of the
    // array each newarray/anewarray/multianewarray creates ("int[]",
    // "java.lang.String[]"; once per class); the site gets a probe when some client wants it.
    auto selectArray = [&](const ClassDecl &decl, const MethodDecl &m, const ArraySite &site) -> std::int64_t {
        declare(decl);
        const auto i = static_cast<std::size_t>(&m - decl.methods.data());
        if (!instrumenting || i >= ids.size() || methods_.Get(ids[i]) == nullptr) return kNoProbe;
        const TId arrayClass = ArrayClassIdFor(jni, loader, site.descriptor, site.arrayClass);
        const ClientMask mask = InterestOf(arrayClass, EG_HEAP);
        if (mask == 0) return kNoProbe;
        return ArraySiteFor(ids[i], site.offset, arrayClass, mask, site.descriptor);
    };
    const bool wantsCalls = core_->HasObservers(EV_METHOD_ENTER) || core_->HasObservers(EV_METHOD_LEAVE);
    const bool wantsAllocs = exactAllocations_;
    const bool wantsSites = SiteProbesWanted();
    InstrumentResult result = wantsCalls || wantsAllocs || wantsSites
                                  ? InstrumentClass(bytes, wantsCalls ? ProbeSelector(select) : ProbeSelector{},
                                                    wantsAllocs ? AllocSelector(selectAlloc) : AllocSelector{},
                                                    wantsSites ? SiteSelector(selectSite) : SiteSelector{},
                                                    wantsAllocs ? ArraySelector(selectArray) : ArraySelector{})
                                  : ParseClass(bytes);
    if (!result.parsed) {
        stats_.classesUnparsable.fetch_add(1, std::memory_order_relaxed);
        std::fprintf(stderr, "martini: class %s left as it is: cannot parse it: %s\n", name, result.error.c_str());
        return {};
    }
    declare(result.decl);  // classes without methods with code
    for (const std::string &s : result.skipped) {
        stats_.methodsLeftAlone.fetch_add(1, std::memory_order_relaxed);
        std::fprintf(stderr, "martini: %s.%s; the method is left as it is (no call events)\n", name, s.c_str());
    }
    for (const std::string &s : result.allocSkipped) {
        stats_.constructorsWithoutAllocProbe.fetch_add(1, std::memory_order_relaxed);
        std::fprintf(stderr, "martini: %s.%s; no allocation probe (objects it constructs are not reported)\n", name,
                     s.c_str());
    }
    for (const std::string &s : result.sitesSkipped) {
        stats_.methodsLeftAlone.fetch_add(1, std::memory_order_relaxed);
        std::fprintf(stderr, "martini: %s.%s; no site probes (its thread interactions are not reported)\n", name,
                     s.c_str());
    }
    stats_.constructorsAllocProbed.fetch_add(result.allocProbed, std::memory_order_relaxed);
    for (const std::string &s : result.arraysSkipped) {
        stats_.methodsLeftAlone.fetch_add(1, std::memory_order_relaxed);
        std::fprintf(stderr, "martini: %s.%s; no array probes (arrays it allocates are not reported)\n", name,
                     s.c_str());
    }
    stats_.sitesProbed.fetch_add(result.sitesProbed, std::memory_order_relaxed);
    stats_.arraySitesProbed.fetch_add(result.arraysProbed, std::memory_order_relaxed);
    // Delegating constructors' this(...) call sites, for the allocation stacks. Set
    // before the class's code reaches the JVM.
    for (std::size_t i = 0; i < result.delegationOffsets.size() && i < ids.size(); ++i) {
        if (MethodRecord *r = methods_.Get(ids[i])) {
            r->delegationBci.store(static_cast<std::int32_t>(result.delegationOffsets[i]), std::memory_order_relaxed);
        }
    }
    if (allocProbe != 0 && redefined != nullptr && jni != nullptr) {
        AllocRecord *a = allocs_.Get(allocProbe);
        if (a != nullptr && a->klass.load(std::memory_order_acquire) == nullptr) {
            a->klass.store(jni->NewWeakGlobalRef(redefined), std::memory_order_release);
        }
    }
    if (result.changed) {
        stats_.classesInstrumented.fetch_add(1, std::memory_order_relaxed);
        stats_.methodsInstrumented.fetch_add(result.instrumented, std::memory_order_relaxed);
        if (!dumpDir_.empty()) {
            std::string file = dumpDir_ + "/" + name + ".class";
            std::replace(file.begin() + static_cast<std::ptrdiff_t>(dumpDir_.size()) + 1, file.end(), '/', '.');
            if (FILE *f = std::fopen(file.c_str(), "wb")) {
                std::fwrite(result.bytes.data(), 1, result.bytes.size(), f);
                std::fclose(f);
            }
        }
    }
    if (newClass && !redefining) RaiseClassDeclared(classId);
    return result.changed ? std::move(result.bytes) : std::vector<std::uint8_t>{};
}

void JvmProvider::RaiseClassDeclared(TId classId) {
    const bool classLoad = core_->IsEnabled(EV_CLASS_LOAD), newMethod = core_->IsEnabled(EV_NEW_METHOD);
    if (!classLoad && !newMethod) return;
    ClassRecord *cls;
    {
        std::lock_guard lock(mutex_);
        cls = classes_[classId - 1].get();  // records are never removed
    }
    if (classLoad) {
        SClassLoadEventData d;
        const BitSet w = core_->RequestedData(EV_CLASS_LOAD);
        d.classId = classId;
        d.szClassName = cls->name.c_str();
        d.validData = DR_CLASS_ID | DR_CLASS_NAME;
        if (!cls->sourceFile.empty()) {
            d.szSourceFileName = cls->sourceFile.c_str();
            d.validData |= DR_SOURCE_FILE_NAME;
        }
        if ((w & DR_THREAD_ID) && tContext != nullptr) {
            d.threadId = tContext->id;
            d.validData |= DR_THREAD_ID;
        }
        core_->Raise<IClassLoadEventObserver>(d);
    }
    if (!newMethod) return;
    std::vector<SLineNumberTableEntry> lines;
    for (TId id : cls->methods) {
        const MethodRecord *m = methods_.Get(id);
        if (m == nullptr) continue;
        SNewMethodEventData d;
        d.methodId = id;
        d.szMethodName = m->name.c_str();
        d.szMethodSig = m->descriptor.c_str();
        d.methodAccessType = AccessType(cls->access, m->access);
        d.classId = classId;
        d.szClassName = cls->name.c_str();
        d.validData = DR_METHOD_ID | DR_METHOD_NAME | DR_METHOD_SIGNATURE | DR_METHOD_ACCESS_TYPE | DR_CLASS_ID |
                      DR_CLASS_NAME;
        if (!cls->sourceFile.empty()) {
            d.szSourceFileName = cls->sourceFile.c_str();
            d.validData |= DR_SOURCE_FILE_NAME;
        }
        if (m->hasCode) {
            lines.clear();
            for (const auto &l : m->lines) lines.push_back({l.offset, l.line});
            d.lineNumbers.entries = lines.data();
            d.lineNumbers.uiSize = d.lineNumbers.uiActualSize = static_cast<unsigned>(lines.size());
            d.validData |= DR_METHOD_LINE_NUMBERS;
        }
        core_->Raise<INewMethodEventObserver>(d);
    }
}

void JvmProvider::OnClassPrepare(JNIEnv *jni, jclass klass) {
    JvmtiString sig(jvmti_);
    if (jvmti_->GetClassSignature(klass, &sig.p, nullptr) != JVMTI_ERROR_NONE) return;
    jobject loader = nullptr;
    jvmti_->GetClassLoader(klass, &loader);
    jint count = 0;
    jmethodID *jmethods = nullptr;
    if (jvmti_->GetClassMethods(klass, &count, &jmethods) != JVMTI_ERROR_NONE) return;
    std::lock_guard lock(mutex_);
    auto found = classByKey_.find(ClassKey(jni, loader, InternalFromSignature(sig.p)));
    if (found != classByKey_.end()) {
        const ClassRecord &cls = *classes_[found->second - 1];
        // Exact allocation mode: the class itself, for probes that cannot pass it.
        if (AllocRecord *a = allocs_.Get(cls.allocProbe); a != nullptr && a->klass.load(std::memory_order_acquire) == nullptr) {
            a->klass.store(jni->NewWeakGlobalRef(klass), std::memory_order_release);
        }
        for (jint i = 0; i < count; ++i) {
            JvmtiString name(jvmti_), desc(jvmti_);
            if (jvmti_->GetMethodName(jmethods[i], &name.p, &desc.p, nullptr) != JVMTI_ERROR_NONE) continue;
            for (TId id : cls.methods) {
                MethodRecord *r = methods_.Get(id);
                if (r && r->name == name.str() && r->descriptor == desc.str()) {
                    r->jmethod.store(jmethods[i], std::memory_order_release);
                    methodByJmethod_[jmethods[i]] = id;
                }
            }
        }
    }
    jvmti_->Deallocate(reinterpret_cast<unsigned char *>(jmethods));
    if (loader) jni->DeleteLocalRef(loader);
}

TId JvmProvider::MethodIdOf(jmethodID jm) {
    if (jm == nullptr) return 0;
    std::lock_guard lock(mutex_);
    if (auto it = methodByJmethod_.find(jm); it != methodByJmethod_.end()) return it->second;
    // A method of a class Martini did not see load (before the agent's hook was on):
    // declare it from JVMTI, without its loader (no JNI here: callers may be non-Java
    // threads).
    jclass klass = nullptr;
    JvmtiString name(jvmti_), desc(jvmti_), sig(jvmti_);
    jint modifiers = 0;
    if (jvmti_->GetMethodDeclaringClass(jm, &klass) != JVMTI_ERROR_NONE ||
        jvmti_->GetMethodName(jm, &name.p, &desc.p, nullptr) != JVMTI_ERROR_NONE ||
        jvmti_->GetClassSignature(klass, &sig.p, nullptr) != JVMTI_ERROR_NONE) {
        return 0;
    }
    jvmti_->GetMethodModifiers(jm, &modifiers);
    const std::string internal = InternalFromSignature(sig.p);
    const std::string key = "?/" + internal;
    TId classId;
    if (auto c = classByKey_.find(key); c != classByKey_.end()) {
        classId = c->second;
    } else {
        auto cls = std::make_unique<ClassRecord>();
        cls->internalName = internal;
        cls->name = SourceName(internal);
        JvmtiString source(jvmti_);
        if (jvmti_->GetSourceFileName(klass, &source.p) == JVMTI_ERROR_NONE) cls->sourceFile = source.str();
        jint classModifiers = 0;
        jvmti_->GetClassModifiers(klass, &classModifiers);
        cls->access = static_cast<std::uint16_t>(classModifiers);
        classes_.push_back(std::move(cls));
        classId = classes_.size();
        classByKey_.emplace(key, classId);
    }
    const TId id = methods_.Add();
    if (id == 0) return 0;
    MethodRecord &r = *methods_.Get(id);
    r.classId = classId;
    r.name = name.str();
    r.descriptor = desc.str();
    r.access = static_cast<std::uint16_t>(modifiers);
    r.hasCode = (modifiers & (kAccNative | kAccAbstract)) == 0;
    jint entries = 0;
    jvmtiLineNumberEntry *table = nullptr;
    if (jvmti_->GetLineNumberTable(jm, &entries, &table) == JVMTI_ERROR_NONE) {
        for (jint i = 0; i < entries; ++i) {
            r.lines.push_back({static_cast<std::uint32_t>(table[i].start_location),
                               static_cast<std::uint32_t>(table[i].line_number)});
        }
        jvmti_->Deallocate(reinterpret_cast<unsigned char *>(table));
        std::sort(r.lines.begin(), r.lines.end(), [](auto &a, auto &b) { return a.offset < b.offset; });
    }
    r.jmethod.store(jm, std::memory_order_release);
    classes_[classId - 1]->methods.push_back(id);
    methodByJmethod_[jm] = id;
    return id;
}

TId JvmProvider::ClassIdOf(JNIEnv *jni, jclass klass) {
    JvmtiString sig(jvmti_);
    if (jvmti_->GetClassSignature(klass, &sig.p, nullptr) != JVMTI_ERROR_NONE) return 0;
    jobject loader = nullptr;
    jvmti_->GetClassLoader(klass, &loader);
    std::lock_guard lock(mutex_);
    const std::string internal = InternalFromSignature(sig.p);
    const std::string key = ClassKey(jni, loader, internal);
    if (loader) jni->DeleteLocalRef(loader);
    if (auto c = classByKey_.find(key); c != classByKey_.end()) return c->second;
    auto cls = std::make_unique<ClassRecord>();
    cls->internalName = internal;
    // Arrays: "[I" -> "int[]", "[Ljava/lang/String;" -> "java.lang.String[]".
    std::string n = internal;
    int dims = 0;
    while (!n.empty() && n[0] == '[') {
        n.erase(0, 1);
        ++dims;
    }
    if (dims > 0) {
        static const std::map<char, const char *> kPrim = {{'Z', "boolean"}, {'B', "byte"}, {'C', "char"},
                                                           {'S', "short"},   {'I', "int"},  {'J', "long"},
                                                           {'F', "float"},   {'D', "double"}};
        n = n.size() == 1 && kPrim.count(n[0]) ? kPrim.at(n[0]) : InternalFromSignature(n.c_str());
        for (int i = 0; i < dims; ++i) n += "[]";
    }
    cls->name = SourceName(n);
    classes_.push_back(std::move(cls));
    classByKey_.emplace(key, classes_.size());
    return classes_.size();
}

ClientMask JvmProvider::InterestOf(TId classId, EEventGroup group) {
    ClassRecord *cls;
    {
        std::lock_guard lock(mutex_);
        if (classId == 0 || classId > classes_.size()) return 0;
        cls = classes_[classId - 1].get();  // records are never removed; `name` never changes
    }
    const bool heap = group == EG_HEAP;
    std::atomic<bool> &known = heap ? cls->heapKnown : cls->monitorKnown;
    std::atomic<ClientMask> &mask = heap ? cls->heapInterest : cls->monitorInterest;
    if (known.load(std::memory_order_acquire)) return mask.load(std::memory_order_relaxed);
    // Two threads may both get here for a class: the core caches the filters' answer
    // by id, so they store the same mask.
    ClientMask m;
    if (heap) {
        SHeapFilterData data{cls->name.c_str()};
        m = core_->HeapInterest(classId, data);
    } else {
        SMonitorFilterData data{cls->name.c_str()};
        m = core_->MonitorInterest(classId, data);
    }
    mask.store(m, std::memory_order_relaxed);
    known.store(true, std::memory_order_release);
    return m;
}

// ---- Threads ---------------------------------------------------------------------------

TId JvmProvider::ThreadIdOf(JNIEnv *jni, jthread thread) {
    if (thread == nullptr) return 0;
    std::lock_guard lock(mutex_);
    for (const auto &[id, r] : threads_) {
        if (r.alive && r.thread != nullptr && jni->IsSameObject(r.thread, thread)) return id;
    }
    return 0;
}

ThreadContext &JvmProvider::ContextOf(JNIEnv *jni) {
    if (tContext != nullptr) return *tContext;
    jthread thread = nullptr;
    jvmti_->GetCurrentThread(&thread);
    jvmtiThreadInfo info{};
    std::string name, group;
    if (thread != nullptr && jvmti_->GetThreadInfo(thread, &info) == JVMTI_ERROR_NONE) {
        name = info.name ? info.name : "";
        if (info.name) jvmti_->Deallocate(reinterpret_cast<unsigned char *>(info.name));
        if (info.thread_group) {
            jvmtiThreadGroupInfo g{};
            if (jvmti_->GetThreadGroupInfo(info.thread_group, &g) == JVMTI_ERROR_NONE && g.name) {
                group = g.name;
                jvmti_->Deallocate(reinterpret_cast<unsigned char *>(g.name));
            }
            jni->DeleteLocalRef(info.thread_group);
        }
        if (info.context_class_loader) jni->DeleteLocalRef(info.context_class_loader);
    }
    std::lock_guard lock(mutex_);
    const TId id = nextThreadId_++;
    ThreadRecord &r = threads_[id];
    r.id = id;
    r.thread = thread ? jni->NewWeakGlobalRef(thread) : nullptr;
    r.name = name;
    r.group = group;
    r.context = std::make_unique<ThreadContext>();
    r.context->id = id;
    r.context->stack.reserve(256);
    tContext = r.context.get();
    if (thread) jni->DeleteLocalRef(thread);
    return *tContext;
}

void JvmProvider::OnThreadStart(JNIEnv *jni, jthread thread) {
    ThreadContext &ctx = ContextOf(jni);
    // The parent, when a probed Thread.start() site started this thread (its Thread
    // object was tagged there).
    TId parent = 0;
    if (parents_ && thread != nullptr) {
        jlong tag = 0;
        if (jvmti_->GetTag(thread, &tag) == JVMTI_ERROR_NONE && tag != 0) {
            std::lock_guard lock(mutex_);
            if (auto it = parentByThreadTag_.find(static_cast<TId>(tag)); it != parentByThreadTag_.end()) {
                parent = it->second;
                parentByThreadTag_.erase(it);
                threads_[ctx.id].parent = parent;
            }
        }
    }
    if (!core_->IsEnabled(EV_THREAD_START)) return;
    std::string name, group;
    {
        std::lock_guard lock(mutex_);
        const ThreadRecord &r = threads_[ctx.id];
        name = r.name;
        group = r.group;
    }
    SThreadStartEventData d;
    if (parent != 0) {
        d.parentThreadId = parent;
        d.validData |= DR_THREAD_PARENT_ID;
    }
    d.threadId = ctx.id;
    d.szThreadName = name.c_str();
    d.szThreadGroupName = group.c_str();
    d.validData |= DR_THREAD_ID | DR_THREAD_NAME | DR_THREAD_GROUP;
    if (core_->RequestedData(EV_THREAD_START) & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    core_->Raise<IThreadStartEventObserver>(d);
}

void JvmProvider::OnThreadEnd(JNIEnv *jni, jthread) {
    ThreadContext &ctx = ContextOf(jni);
    // Frames still open when the thread ends were left by an exception from code the
    // probes could not see (a super() call): report them as exceptional exits.
    while (!ctx.stack.empty()) Leave(jni, ctx.stack.back(), true);
    SThreadEndEventData d;
    d.threadId = ctx.id;
    d.validData = DR_THREAD_ID;
    if (core_->RequestedData(EV_THREAD_END) & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    core_->Raise<IThreadEndEventObserver>(d);
    std::lock_guard lock(mutex_);
    ThreadRecord &r = threads_[ctx.id];
    r.alive = false;
    tContext = nullptr;
    r.context.reset();
}

// ---- Probes ----------------------------------------------------------------------------

void JvmProvider::Enter(JNIEnv *jni, std::int32_t id) noexcept {
    if (dead_.load(std::memory_order_relaxed)) return;  // after VmShutdown
    ThreadContext &ctx = tContext != nullptr ? *tContext : ContextOf(jni);
    ctx.stack.push_back(id);
    const MethodRecord *m = methods_.Get(static_cast<TId>(id));
    if (m == nullptr) return;
    SMethodEnterEventData d;
    d.methodId = static_cast<TId>(id);
    d.threadId = ctx.id;
    d.validData = DR_METHOD_ID | DR_THREAD_ID;
    FillTimes(d, core_->RequestedData(EV_METHOD_ENTER), jvmti_);
    core_->Raise<IMethodEnterEventObserver>(d, m->callGraph);
}

void JvmProvider::Leave(JNIEnv *jni, std::int32_t id, bool exceptional) noexcept {
    if (dead_.load(std::memory_order_relaxed)) return;
    ThreadContext &ctx = tContext != nullptr ? *tContext : ContextOf(jni);
    // The leave pops through to its own frame: frames above it were left by an
    // exception the probes could not see (thrown by a super() call), so they are
    // reported as exceptional exits first, innermost first. A leave whose enter was
    // never seen (the method was instrumented while running) is ignored.
    auto it = std::find(ctx.stack.rbegin(), ctx.stack.rend(), id);
    if (it == ctx.stack.rend()) return;
    const std::size_t keep = static_cast<std::size_t>(ctx.stack.rend() - it) - 1;
    const BitSet wanted = core_->RequestedData(EV_METHOD_LEAVE);
    while (ctx.stack.size() > keep) {
        const std::int32_t top = ctx.stack.back();
        ctx.stack.pop_back();
        const MethodRecord *m = methods_.Get(static_cast<TId>(top));
        if (m == nullptr) continue;
        SMethodLeaveEventData d;
        d.methodId = static_cast<TId>(top);
        d.threadId = ctx.id;
        d.validData = DR_METHOD_ID | DR_THREAD_ID;
        d.bIsExceptionExit = top != id || exceptional;
        FillTimes(d, wanted, jvmti_);
        core_->Raise<IMethodLeaveEventObserver>(d, m->callGraph);
    }
}

// ---- Thread interactions -------------------------------------------------------------

std::int64_t JvmProvider::SiteProbeFor(TId methodId, const CallSite &site, ClientMask interest) {
    std::lock_guard lock(mutex_);
    const auto key = std::make_pair(methodId, site.offset);
    TId id = 0;
    if (auto it = siteByLocation_.find(key); it != siteByLocation_.end()) {
        id = it->second;  // retransformed: the same site, the same id
    } else {
        id = sites_.Add();
        if (id == 0) return kNoProbe;  // table full: the site is not reported
        siteByLocation_.emplace(key, id);
    }
    SiteRecord &r = *sites_.Get(id);
    r.methodId = methodId;
    r.kind = site.kind;
    r.opcode = site.opcode;
    r.owner = site.owner;
    r.name = site.name;
    r.interest = interest;
    return static_cast<std::int64_t>(id);
}

void JvmProvider::SetThreadClass(JNIEnv *jni) {
    jclass thread = jni->FindClass("java/lang/Thread");
    if (thread == nullptr) {
        jni->ExceptionClear();
        return;
    }
    threadClass_ = static_cast<jclass>(jni->NewGlobalRef(thread));
    threadStart_ = jni->GetMethodID(thread, "start", "()V");
    threadInterrupt_ = jni->GetMethodID(thread, "interrupt", "()V");
    jni->ExceptionClear();
    jni->DeleteLocalRef(thread);
}

bool JvmProvider::ReachesThreadMethod(JNIEnv *jni, jobject receiver, const SiteRecord &site) {
    if (threadClass_ == nullptr || !jni->IsInstanceOf(receiver, threadClass_)) return false;
    // join is final in Thread: every join()V/(J)V/(JI)V on a Thread is Thread's.
    if (site.kind == Interaction::kJoin) return true;
    // start()/interrupt() may be overridden: the call reaches Thread's only when the
    // method it resolves to is (an override that calls super.start() is reported at
    // that invokespecial).
    if (site.opcode == kInvokespecialOp && site.owner == "java/lang/Thread") return true;
    jclass c = jni->GetObjectClass(receiver);
    if (site.opcode == kInvokespecialOp) {
        // super.start() through an intermediate class: resolve from that class.
        const std::string want = "L" + site.owner + ";";
        while (c != nullptr) {
            JvmtiString sig(jvmti_);
            if (jvmti_->GetClassSignature(c, &sig.p, nullptr) == JVMTI_ERROR_NONE && sig.str() == want) break;
            jclass super = jni->GetSuperclass(c);
            jni->DeleteLocalRef(c);
            c = super;
        }
        if (c == nullptr) return false;
    }
    // HotSpot gives one jmethodID per method: an inherited method's is Thread's.
    jmethodID m = jni->GetMethodID(c, site.name.c_str(), "()V");
    if (jni->ExceptionCheck()) jni->ExceptionClear();
    jni->DeleteLocalRef(c);
    return m != nullptr && m == (site.kind == Interaction::kStart ? threadStart_ : threadInterrupt_);
}

void JvmProvider::Interaction(JNIEnv *jni, jobject receiver, std::int32_t siteId) noexcept {
    if (dead_.load(std::memory_order_relaxed)) return;  // after VmShutdown
    const SiteRecord *site = sites_.Get(static_cast<TId>(siteId));
    if (site == nullptr) return;
    const bool report = site->interest != 0 && core_->IsEnabled(EV_THREAD_INTERACTION);
    const bool parent = parents_ && site->kind == Interaction::kStart;
    if (!report && !parent) return;
    if (site->kind != Interaction::kSleep) {
        if (receiver == nullptr) return;  // the call throws NullPointerException
        const bool threadMethod = site->kind == Interaction::kStart || site->kind == Interaction::kJoin ||
                                  site->kind == Interaction::kInterrupt;
        if (threadMethod && !ReachesThreadMethod(jni, receiver, *site)) return;
    }
    ThreadContext &ctx = tContext != nullptr ? *tContext : ContextOf(jni);
    TId objectId = 0;
    if (receiver != nullptr) objectId = TagOf(jni, receiver, true);
    if (parent && objectId != 0) {
        // Before start() runs: the new thread's ThreadStart finds it (OnThreadStart).
        std::lock_guard lock(mutex_);
        parentByThreadTag_[objectId] = ctx.id;
    }
    if (!report) return;
    SThreadInteractionEventData d;
    d.threadId = ctx.id;
    d.interactionType = static_cast<EThreadInteractionType>(site->kind);
    d.validData = DR_THREAD_ID | DR_INTERACTION_TYPE;
    if (receiver != nullptr) {
        jclass klass = jni->GetObjectClass(receiver);
        d.classId = ClassIdOf(jni, klass);
        jni->DeleteLocalRef(klass);
        d.objectId = objectId;
        d.validData |= DR_CLASS_ID;
        if (objectId != 0) d.validData |= DR_OBJECT_ID;
    }
    if (core_->RequestedData(EV_THREAD_INTERACTION) & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    core_->Raise<IThreadInteractionEventObserver>(d, site->interest);
}

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
    SObjectAllocEventData d;
    d.threadId = ContextOf(jni).id;
    d.objectId = TagOf(jni, object, true);
    d.classId = classId;
    d.uiObjectSize = size;
    d.validData = DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_OBJECT_SIZE;
    // The record answers GetObjectInfo and ObjectFree. In exact mode it is kept only
    // when some client observes ObjectFree, which removes it: otherwise every object
    // ever allocated would stay in the table.
    if (!fromProbe || core_->HasObservers(EV_OBJECT_FREE)) {
        RememberObject(d.objectId, {classId, d.uiObjectSize, array != nullptr ? *array : SArrayInfo{}});
    }
    const BitSet wanted = core_->RequestedData(EV_OBJECT_ALLOC);
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

// ---- Objects -----------------------------------------------------------------------------

TId JvmProvider::TagOf(JNIEnv *, jobject object, bool create) {
    jlong tag = 0;
    if (object == nullptr || jvmti_->GetTag(object, &tag) != JVMTI_ERROR_NONE) return 0;
    if (tag == 0 && create) {
        tag = static_cast<jlong>(nextObjectTag_.fetch_add(1, std::memory_order_relaxed));
        if (jvmti_->SetTag(object, tag) != JVMTI_ERROR_NONE) return 0;
    }
    return static_cast<TId>(tag);
}

void JvmProvider::RememberObject(TId id, ObjectRecord record) {
    std::lock_guard lock(mutex_);
    objects_[id] = record;
}

std::pair<bool, ObjectRecord> JvmProvider::ForgetObject(TId id) {
    std::lock_guard lock(mutex_);
    auto it = objects_.find(id);
    if (it == objects_.end()) return {false, {}};
    ObjectRecord r = it->second;
    objects_.erase(it);
    return {true, r};
}

// ---- Data requests ----------------------------------------------------------------------

TResult JvmProvider::DescribeModule(TId, BitSet, core::ModuleFacts &) noexcept {
    return MRTE_ERROR_NOT_SUPPORTED;  // not yet: modules
}

TResult JvmProvider::DescribeClass(TId id, BitSet, core::ClassFacts &f) noexcept {
    std::lock_guard lock(mutex_);
    if (id == 0 || id > classes_.size()) return MRTE_ERROR_ILLEGAL_ID;
    const ClassRecord &c = *classes_[id - 1];
    f.name = c.name;
    f.methods = c.methods;
    f.given = DR_CLASS_NAME | DR_CLASS_METHODS;
    if (!c.sourceFile.empty()) {
        f.sourceFile = c.sourceFile;
        f.given |= DR_SOURCE_FILE_NAME;
    }
    return MRTE_RESULT_OK;
}

TResult JvmProvider::DescribeMethod(TId id, BitSet, core::MethodFacts &f) noexcept {
    const MethodRecord *m = methods_.Get(id);
    if (m == nullptr || id > methods_.size()) return MRTE_ERROR_ILLEGAL_ID;
    std::lock_guard lock(mutex_);
    const ClassRecord &c = *classes_[m->classId - 1];
    f.name = m->name;
    f.signature = m->descriptor;
    f.className = c.name;
    f.classId = m->classId;
    f.accessType = AccessType(c.access, m->access);
    f.given = DR_METHOD_NAME | DR_METHOD_SIGNATURE | DR_CLASS_NAME | DR_CLASS_ID | DR_METHOD_ACCESS_TYPE;
    if (!c.sourceFile.empty()) {
        f.sourceFile = c.sourceFile;
        f.given |= DR_SOURCE_FILE_NAME;
    }
    if (m->hasCode) {
        for (const auto &l : m->lines) f.lines.push_back({l.offset, l.line});
        f.given |= DR_METHOD_LINE_NUMBERS;
    }
    if (const auto address = m->codeAddress.load(std::memory_order_acquire); address != 0) {
        f.codeAddress = address;
        f.codeSize = m->codeSize.load(std::memory_order_relaxed);
        f.given |= DR_METHOD_CODE;
    }
    return MRTE_RESULT_OK;
}

TResult JvmProvider::DescribeObject(TId id, BitSet, core::ObjectFacts &f) noexcept {
    std::lock_guard lock(mutex_);
    auto it = objects_.find(id);
    if (it == objects_.end()) return MRTE_ERROR_ILLEGAL_ID;
    f.classId = it->second.classId;
    f.size = it->second.size;
    f.arrayInfo = it->second.arrayInfo;
    f.given = DR_CLASS_ID | DR_OBJECT_SIZE | DR_ARRAY_INFO;
    return MRTE_RESULT_OK;
}

TResult JvmProvider::DescribeThread(TId id, BitSet requested, unsigned maxFrames, core::ThreadFacts &f) noexcept {
    JNIEnv *jni = nullptr;
    if (vm_->GetEnv(reinterpret_cast<void **>(&jni), JNI_VERSION_1_8) != JNI_OK) return MRTE_ERROR_FAIL;
    jthread thread = nullptr;
    {
        std::lock_guard lock(mutex_);
        auto it = threads_.find(id);
        if (it == threads_.end()) return MRTE_ERROR_ILLEGAL_ID;
        f.name = it->second.name;
        f.group = it->second.group;
        f.given = DR_THREAD_NAME | DR_THREAD_GROUP;
        if (it->second.parent != 0) {
            f.parentThreadId = it->second.parent;
            f.given |= DR_THREAD_PARENT_ID;
        }
        if (!it->second.alive) {
            f.state = TS_TERMINATED;
            f.given |= DR_THREAD_STATE;
            return MRTE_RESULT_OK;
        }
        if (it->second.thread) thread = jni->NewLocalRef(it->second.thread);
    }
    if (thread == nullptr) return MRTE_RESULT_OK;
    jint state = 0;
    if (jvmti_->GetThreadState(thread, &state) == JVMTI_ERROR_NONE) {
        f.state = StateFromJvmti(state);
        f.given |= DR_THREAD_STATE;
    }
    if (requested & DR_VM_CALL_STACK) {
        const jint depth = maxFrames == 0 ? 4096 : static_cast<jint>(maxFrames);
        std::vector<jvmtiFrameInfo> frames(static_cast<std::size_t>(depth));
        jint count = 0;
        if (jvmti_->GetStackTrace(thread, 0, depth, frames.data(), &count) == JVMTI_ERROR_NONE) {
            AppendFrames(frames.data(), count, f.stack);
            f.given |= DR_VM_CALL_STACK;
        }
    }
    if (requested & DR_THREAD_CPU_TIME) {
        jlong cpu = 0;
        if (jvmti_->GetThreadCpuTime(thread, &cpu) == JVMTI_ERROR_NONE) {
            f.cpuTimeNs = static_cast<std::uint64_t>(cpu);
            f.given |= DR_THREAD_CPU_TIME;
        }
    }
    jni->DeleteLocalRef(thread);
    return MRTE_RESULT_OK;
}

TResult JvmProvider::ListThreads(std::vector<TId> &out) noexcept {
    std::lock_guard lock(mutex_);
    out.clear();
    for (const auto &[id, r] : threads_) {
        if (r.alive) out.push_back(id);
    }
    std::sort(out.begin(), out.end());
    return MRTE_RESULT_OK;
}

TResult JvmProvider::DescribeCompiledCode(UIOP address, BitSet, core::CompiledMethodFacts &f) noexcept {
    const TId n = methods_.size();
    for (TId id = 1; id <= n; ++id) {
        const MethodRecord *m = methods_.Get(id);
        const auto start = m ? m->codeAddress.load(std::memory_order_acquire) : 0;
        if (start != 0 && address >= start && address < start + m->codeSize.load(std::memory_order_relaxed)) {
            f.methodId = id;
            f.codeAddress = start;
            f.codeSize = m->codeSize.load(std::memory_order_relaxed);
            f.given = DR_METHOD_ID | DR_METHOD_CODE;
            return MRTE_RESULT_OK;
        }
    }
    return MRTE_ERROR_ILLEGAL_ID;
}

TResult JvmProvider::CurrentThread(TId &id) noexcept {
    if (tContext != nullptr) {
        id = tContext->id;
        return MRTE_RESULT_OK;
    }
    JNIEnv *jni = nullptr;
    if (vm_->GetEnv(reinterpret_cast<void **>(&jni), JNI_VERSION_1_8) != JNI_OK) return MRTE_ERROR_FAIL;
    id = ContextOf(jni).id;
    return MRTE_RESULT_OK;
}

TResult JvmProvider::SuspendAll() noexcept {
    jvmtiCapabilities caps{};
    caps.can_suspend = 1;
    if (jvmti_->AddCapabilities(&caps) != JVMTI_ERROR_NONE) return MRTE_ERROR_NOT_SUPPORTED;
    jint count = 0;
    jthread *threads = nullptr;
    if (jvmti_->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return MRTE_ERROR_FAIL;
    JNIEnv *jni = nullptr;
    vm_->GetEnv(reinterpret_cast<void **>(&jni), JNI_VERSION_1_8);
    jthread self = nullptr;
    jvmti_->GetCurrentThread(&self);
    std::vector<jthread> others;
    for (jint i = 0; i < count; ++i) {
        if (self == nullptr || jni == nullptr || !jni->IsSameObject(threads[i], self)) others.push_back(threads[i]);
    }
    std::vector<jvmtiError> results(others.size());
    const jvmtiError e = jvmti_->SuspendThreadList(static_cast<jint>(others.size()), others.data(), results.data());
    jvmti_->Deallocate(reinterpret_cast<unsigned char *>(threads));
    return e == JVMTI_ERROR_NONE ? MRTE_RESULT_OK : MRTE_ERROR_FAIL;
}

TResult JvmProvider::ResumeAll() noexcept {
    jint count = 0;
    jthread *threads = nullptr;
    if (jvmti_->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return MRTE_ERROR_FAIL;
    std::vector<jvmtiError> results(static_cast<std::size_t>(count));
    const jvmtiError e = jvmti_->ResumeThreadList(count, threads, results.data());
    jvmti_->Deallocate(reinterpret_cast<unsigned char *>(threads));
    return e == JVMTI_ERROR_NONE || e == JVMTI_ERROR_MUST_POSSESS_CAPABILITY ? MRTE_RESULT_OK : MRTE_ERROR_FAIL;
}

TResult JvmProvider::RunGc() noexcept {
    return jvmti_->ForceGarbageCollection() == JVMTI_ERROR_NONE ? MRTE_RESULT_OK : MRTE_ERROR_FAIL;
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
