#include "jvm_provider.h"
#include "jvm_support.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <tuple>

namespace martini::jvm {

JvmProvider *gProvider = nullptr;

constinit thread_local ThreadContext *tContext __attribute__((tls_model("initial-exec"))) = nullptr;

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
        case EV_MODULE_LOAD:
            return true;
        default:
            return false;  // not yet: module unloading, moved references, sampling
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

std::vector<std::uint8_t> JvmProvider::OnClassFile(JNIEnv *jni, jobject loader, jobject protectionDomain, const char *name,
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
        std::tie(classId, newClass) = DeclareClass(ClassKey(jni, loader, decl.internalName), decl.internalName,
                                                   decl.sourceFile, decl.accessFlags);
        ClassRecord &cls = *classes_[classId - 1];
        ids.assign(decl.methods.size(), 0);
        for (std::size_t i = 0; i < decl.methods.size(); ++i) {
            const MethodDecl &m = decl.methods[i];
            // A class seen again (retransformed, or defined again by its loader) keeps its ids.
            ids[i] = MethodOf(cls, m.name, m.descriptor);
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
        const ClientMask interest = core_->CallGraphInterest(ids[i], data);
        callInterest_.Set(ids[i], interest);
        return interest != 0 ? static_cast<std::int64_t>(ids[i]) : kNoProbe;
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
    Selectors selectors;
    if (wantsCalls) selectors.calls = select;
    if (wantsAllocs) selectors.allocs = selectAlloc;
    if (wantsSites) selectors.sites = selectSite;
    if (wantsAllocs) selectors.arrays = selectArray;
    InstrumentResult result =
        wantsCalls || wantsAllocs || wantsSites ? InstrumentClass(bytes, selectors) : ParseClass(bytes);
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
    if (classId != 0) AssignModule(jni, loader, protectionDomain, name, classId);
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
        if (cls->moduleId != 0) {
            d.moduleId = cls->moduleId;
            d.validData |= DR_MODULE_ID;
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
        if (cls->moduleId != 0) {
            d.moduleId = cls->moduleId;
            d.validData |= DR_MODULE_ID;
        }
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
        std::unordered_map<std::string, TId> byName;  // "name(descriptor)" -> id
        for (TId id : cls.methods) {
            if (const MethodRecord *r = methods_.Get(id)) byName.emplace(r->name + r->descriptor, id);
        }
        for (jint i = 0; i < count; ++i) {
            JvmtiString name(jvmti_), desc(jvmti_);
            if (jvmti_->GetMethodName(jmethods[i], &name.p, &desc.p, nullptr) != JVMTI_ERROR_NONE) continue;
            auto it = byName.find(name.str() + desc.str());
            if (it == byName.end()) continue;
            methods_.Get(it->second)->jmethod.store(jmethods[i], std::memory_order_release);
            methodByJmethod_[jmethods[i]] = it->second;
        }
    }
    jvmti_->Deallocate(reinterpret_cast<unsigned char *>(jmethods));
    if (loader) jni->DeleteLocalRef(loader);
}

bool JvmProvider::NeedsRewriting(JNIEnv *jni, jclass klass) {
    if (exactAllocations_ || SiteProbesWanted()) return true;
    if (!core_->HasObservers(EV_METHOD_ENTER) && !core_->HasObservers(EV_METHOD_LEAVE)) return false;
    JvmtiString sig(jvmti_);
    if (jvmti_->GetClassSignature(klass, &sig.p, nullptr) != JVMTI_ERROR_NONE) return true;
    const std::string internal = InternalFromSignature(sig.p);
    if (internal == "java/lang/Object" || internal.rfind("martini/runtime/", 0) == 0) return false;  // never probed
    jint count = 0;
    jmethodID *jmethods = nullptr;
    // A class loaded but not yet prepared has no methods to list: retransformed, as
    // before (about 75 of the 450 classes loaded before VMInit).
    if (jvmti_->GetClassMethods(klass, &count, &jmethods) != JVMTI_ERROR_NONE) return true;
    jobject loader = nullptr;
    jvmti_->GetClassLoader(klass, &loader);
    jint classModifiers = 0;
    jvmti_->GetClassModifiers(klass, &classModifiers);
    JvmtiString source(jvmti_);
    jvmti_->GetSourceFileName(klass, &source.p);
    // Declared as OnClassFile would (the same key, names and lines), so that a later
    // retransformation finds these records and keeps their ids.
    TId classId = 0;
    struct Asked {
        TId id;
        std::string name, descriptor;
        EMethodAccessType access;
    };
    std::vector<Asked> ask;
    {
        std::lock_guard lock(mutex_);
        classId = DeclareClass(ClassKey(jni, loader, internal), internal, source.str(),
                               static_cast<std::uint16_t>(classModifiers))
                      .first;
        ClassRecord &cls = *classes_[classId - 1];
        for (jint i = 0; i < count; ++i) {
            JvmtiString name(jvmti_), desc(jvmti_);
            jint modifiers = 0;
            if (jvmti_->GetMethodName(jmethods[i], &name.p, &desc.p, nullptr) != JVMTI_ERROR_NONE) continue;
            jvmti_->GetMethodModifiers(jmethods[i], &modifiers);
            TId id = MethodOf(cls, name.str(), desc.str());
            if (id == 0) {
                id = DeclareMethodFromJvmti(classId, jmethods[i], name.str(), desc.str(), modifiers);
                if (id == 0) continue;  // table full
            }
            const MethodRecord &r = *methods_.Get(id);
            if (r.hasCode) ask.push_back({id, r.name, r.descriptor, AccessType(cls.access, r.access)});
        }
    }
    jvmti_->Deallocate(reinterpret_cast<unsigned char *>(jmethods));
    AssignModule(jni, loader, nullptr, internal.c_str(), classId);
    if (loader) jni->DeleteLocalRef(loader);
    // Filters run outside the provider's lock (they are client code).
    const std::string className = SourceName(internal);
    bool wanted = false;
    for (const Asked &a : ask) {
        SCallGraphFilterData data{className.c_str(), a.name.c_str(), a.descriptor.c_str(), a.access};
        const ClientMask interest = core_->CallGraphInterest(a.id, data);
        callInterest_.Set(a.id, interest);
        wanted = wanted || interest != 0;
    }
    return wanted;
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
    JvmtiString source(jvmti_);
    jvmti_->GetSourceFileName(klass, &source.p);
    jint classModifiers = 0;
    jvmti_->GetClassModifiers(klass, &classModifiers);
    const TId classId =
        DeclareClass("?/" + internal, internal, source.str(), static_cast<std::uint16_t>(classModifiers)).first;
    const TId id = DeclareMethodFromJvmti(classId, jm, name.str(), desc.str(), modifiers);
    if (id == 0) return 0;
    methods_.Get(id)->jmethod.store(jm, std::memory_order_release);
    methodByJmethod_[jm] = id;
    return id;
}

std::pair<TId, bool> JvmProvider::DeclareClass(const std::string &key, const std::string &internalName,
                                               const std::string &sourceFile, std::uint16_t access) {
    if (auto found = classByKey_.find(key); found != classByKey_.end()) return {found->second, false};
    auto cls = std::make_unique<ClassRecord>();
    cls->internalName = internalName;
    cls->name = SourceName(internalName);
    cls->sourceFile = sourceFile;
    cls->access = access;
    classes_.push_back(std::move(cls));
    const TId classId = classes_.size();
    classByKey_.emplace(key, classId);
    return {classId, true};
}

TId JvmProvider::MethodOf(const ClassRecord &cls, const std::string &name, const std::string &descriptor) const {
    for (TId id : cls.methods) {
        const MethodRecord *r = methods_.Get(id);
        if (r && r->name == name && r->descriptor == descriptor) return id;
    }
    return 0;
}

TId JvmProvider::DeclareMethodFromJvmti(TId classId, jmethodID jm, const std::string &name, const std::string &desc,
                                        jint modifiers) {
    const TId id = methods_.Add();
    if (id == 0) return 0;
    MethodRecord &r = *methods_.Get(id);
    r.classId = classId;
    r.name = name;
    r.descriptor = desc;
    r.access = static_cast<std::uint16_t>(modifiers);
    r.hasCode = (modifiers & (kAccNative | kAccAbstract)) == 0;
    jint entries = 0;
    jvmtiLineNumberEntry *table = nullptr;
    if (r.hasCode && jvmti_->GetLineNumberTable(jm, &entries, &table) == JVMTI_ERROR_NONE) {
        for (jint i = 0; i < entries; ++i) {
            r.lines.push_back({static_cast<std::uint32_t>(table[i].start_location),
                               static_cast<std::uint32_t>(table[i].line_number)});
        }
        jvmti_->Deallocate(reinterpret_cast<unsigned char *>(table));
        std::sort(r.lines.begin(), r.lines.end(), [](auto &a, auto &b) { return a.offset < b.offset; });
    }
    classes_[classId - 1]->methods.push_back(id);
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
    ThreadContext &ctx = CurrentContext(*this, jni);
    ctx.stack.push_back(id);
    const ClientMask interest = callInterest_.Get(static_cast<TId>(id));
    if (interest == 0) return;
    SMethodEnterEventData d;
    d.methodId = static_cast<TId>(id);
    d.threadId = ctx.id;
    d.validData = DR_METHOD_ID | DR_THREAD_ID;
    FillTimes(d, core_->RequestedData(EV_METHOD_ENTER), jvmti_);
    core_->Raise<IMethodEnterEventObserver>(d, interest);
}

void JvmProvider::Leave(JNIEnv *jni, std::int32_t id, bool exceptional) noexcept {
    if (dead_.load(std::memory_order_relaxed)) return;
    ThreadContext &ctx = CurrentContext(*this, jni);
    // The leave pops through to its own frame: frames above it were left by an
    // exception the probes could not see (thrown by a super() call), so they are
    // reported as exceptional exits first, innermost first. A leave whose enter was
    // never seen (the method was instrumented while running) is ignored. The search
    // starts at the innermost frame, which is the common case's match.
    auto it = std::find(ctx.stack.rbegin(), ctx.stack.rend(), id);
    if (it == ctx.stack.rend()) return;
    const std::size_t keep = static_cast<std::size_t>(ctx.stack.rend() - it) - 1;
    const BitSet wanted = core_->RequestedData(EV_METHOD_LEAVE);
    while (ctx.stack.size() > keep) {
        const std::int32_t top = ctx.stack.back();
        ctx.stack.pop_back();
        const ClientMask interest = callInterest_.Get(static_cast<TId>(top));
        if (interest == 0) continue;
        SMethodLeaveEventData d;
        d.methodId = static_cast<TId>(top);
        d.threadId = ctx.id;
        d.validData = DR_METHOD_ID | DR_THREAD_ID;
        d.bIsExceptionExit = top != id || exceptional;
        FillTimes(d, wanted, jvmti_);
        core_->Raise<IMethodLeaveEventObserver>(d, interest);
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

}  // namespace martini::jvm
