#include "instrumentation.h"

#include "allocations.h"
#include "calls.h"
#include "coverage.h"
#include "interactions.h"
#include "jvm_support.h"
#include "modules.h"
#include "probes.h"
#include "sampling.h"
#include "martini/core/log.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace martini::jvm {

void Instrumentation::Decide() {
    wanted_ = Calls::Wanted() || Allocations::Exact() || Interactions::Wanted() || Coverage::Wanted();
    classes_ = wanted_ || Vm::Wants(EV_CLASS_LOAD) || Vm::Wants(EV_NEW_METHOD);
    if (const char *dump = std::getenv("MARTINI_DUMP_CLASSES")) dumpDir_ = dump;
    if (const char *digests = std::getenv("MARTINI_BYTECODE_DIGESTS")) {
        const std::string d = digests;
        const std::size_t colon = d.rfind(':');
        digestFile_ = colon == std::string::npos ? d : d.substr(0, colon);
        digestPrefix_ = colon == std::string::npos ? "" : d.substr(colon + 1);
    }
}

void Instrumentation::AddCapabilities(jvmtiCapabilities &caps) {
    ClassRegistry::AddCapabilities(caps);
    if (wanted_) {
        caps.can_retransform_classes = 1;
        caps.can_retransform_any_class = 1;
    }
    if (Coverage::Wanted()) caps.can_get_source_file_name = 1;  // coverage filters of classes loaded before
    if (!digestFile_.empty()) caps.can_get_bytecodes = 1;
}

void Instrumentation::SetCallbacks(jvmtiEventCallbacks &callbacks) {
    callbacks.ClassFileLoadHook = OnClassFileLoadHook;
    callbacks.ClassPrepare = OnClassPrepare;
}

void Instrumentation::EnableEvents(const std::string &agentDir) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    if (classes_) {
        jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
    }
    // Sampling needs ClassPrepare alone (jmethodIDs for AsyncGetCallTrace).
    if (classes_ || Sampling::Wanted()) {
        jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_PREPARE, nullptr);
    }
    if (!wanted_ || jarAdded_) return;  // attached again: the jar is on the path already
    const std::string jar = agentDir + "/martini-probes.jar";
    if (jvmti->AddToBootstrapClassLoaderSearch(jar.c_str()) != JVMTI_ERROR_NONE) {
        core::LogLine("cannot add " + jar + " to the bootstrap class path: no call-graph, exact allocation or "
                "thread-interaction events");
        wanted_ = false;
        return;
    }
    jarAdded_ = true;
}

// ---- Class loading -----------------------------------------------------------------------

void JNICALL Instrumentation::OnClassFileLoadHook(jvmtiEnv *jvmti, JNIEnv *jni, jclass redefined, jobject loader,
                                                  const char *name, jobject protectionDomain, jint length,
                                                  const unsigned char *data, jint *newLength,
                                                  unsigned char **newData) {
    if (Vm::Dead() || length <= 0) return;
    std::vector<std::uint8_t> out =
        OnClassFile(jni, loader, protectionDomain, name, {data, static_cast<std::size_t>(length)}, redefined);
    if (out.empty()) return;
    unsigned char *buffer = nullptr;
    if (jvmti->Allocate(static_cast<jlong>(out.size()), &buffer) != JVMTI_ERROR_NONE) return;
    std::memcpy(buffer, out.data(), out.size());
    *newLength = static_cast<jint>(out.size());
    *newData = buffer;
}

std::vector<std::uint8_t> Instrumentation::OnClassFile(JNIEnv *jni, jobject loader, jobject protectionDomain,
                                                       const char *name, std::span<const std::uint8_t> bytes,
                                                       jclass redefined) {
    // The probes' own package is never probed.
    if (name == nullptr || std::strncmp(name, "martini/runtime/", 16) == 0) return {};
    stats_.classesSeen.fetch_add(1, std::memory_order_relaxed);
    ClassLoad load;
    load.jni = jni;
    load.loader = loader;
    load.instrumenting = instrumenting_.load(std::memory_order_acquire);
    // Each component chooses the probes of its kind (an empty selector: none wanted).
    const ProbeSelector calls = Calls::Selector(load);
    const AllocSelector allocs = Allocations::ClassSelector(load);
    const SiteSelector sites = Interactions::Selector(load);
    const ArraySelector arrays = Allocations::ArraysSelector(load);
    const CoverageSelector coverage = Coverage::Selector(load);
    InstrumentResult result = calls || allocs || sites || arrays || coverage
                                  ? InstrumentClass(bytes, Selectors{calls, allocs, sites, arrays, coverage})
                                  : ParseClass(bytes);
    if (!result.parsed) {
        stats_.classesUnparsable.fetch_add(1, std::memory_order_relaxed);
        core::LogF("class %s left as it is: cannot parse it: %s", name, result.error.c_str());
        return {};
    }
    load.Declare(result.decl);  // classes without methods with code
    Count(name, result);
    // Delegating constructors' this(...) call sites, for the allocation stacks. Set
    // before the class's code reaches the JVM.
    for (std::size_t i = 0; i < result.delegationOffsets.size() && i < load.ids.size(); ++i) {
        if (MethodRecord *r = ClassRegistry::Method(load.ids[i])) {
            r->delegationBci.store(static_cast<std::int32_t>(result.delegationOffsets[i]), std::memory_order_relaxed);
        }
    }
    SetRunLines(load, result);
    Coverage::Record(load, result);
    if (load.allocProbe != 0 && redefined != nullptr) Allocations::BindClass(jni, load.allocProbe, redefined);
    if (result.changed) Dump(name, result.bytes);
    if (load.classId != 0) Modules::Assign(jni, loader, protectionDomain, name, *ClassRegistry::Class(load.classId));
    if (load.classId != 0 && result.changed) ClassRegistry::Class(load.classId)->probed.store(true);
    if (load.newClass && redefined == nullptr) ClassRegistry::RaiseDeclared(load.classId);
    return result.changed ? std::move(result.bytes) : std::vector<std::uint8_t>{};
}

void Instrumentation::SetRunLines(const ClassLoad &load, const InstrumentResult &result) {
    // The probes moved the code's offsets: the rewritten class's own line tables map a
    // stack frame's bytecode index to its line (GetThreadInfo's stacks, allocation
    // stacks, samples). Unchanged methods read the loaded tables.
    ClassDecl run;
    if (result.changed) {
        InstrumentResult parsed = ParseClass(result.bytes);
        if (parsed.parsed && parsed.decl.methods.size() == result.decl.methods.size()) run = std::move(parsed.decl);
    }
    for (std::size_t i = 0; i < load.ids.size() && i < result.decl.methods.size(); ++i) {
        MethodRecord *r = ClassRegistry::Method(load.ids[i]);
        if (r == nullptr) continue;
        const std::vector<LineEntry> *table = nullptr;
        if (i < run.methods.size() && run.methods[i].name == result.decl.methods[i].name &&
            run.methods[i].descriptor == result.decl.methods[i].descriptor &&
            run.methods[i].lines != result.decl.methods[i].lines) {
            auto lines = run.methods[i].lines;
            std::sort(lines.begin(), lines.end(), [](auto &a, auto &b) { return a.offset < b.offset; });
            table = new std::vector<LineEntry>(std::move(lines));  // kept: see MethodRecord::runLines
        }
        r->runLines.store(table, std::memory_order_release);
    }
}

void Instrumentation::Count(const char *name, const InstrumentResult &result) {
    stats_.methodsLeftAlone.fetch_add(
        result.skipped.size() + result.sitesSkipped.size() + result.arraysSkipped.size(), std::memory_order_relaxed);
    stats_.constructorsWithoutAllocProbe.fetch_add(result.allocSkipped.size(), std::memory_order_relaxed);
    for (const std::string &line : SkippedSummary(name, result)) core::LogLine(line);
    stats_.constructorsAllocProbed.fetch_add(result.allocProbed, std::memory_order_relaxed);
    stats_.sitesProbed.fetch_add(result.sitesProbed, std::memory_order_relaxed);
    stats_.arraySitesProbed.fetch_add(result.arraysProbed, std::memory_order_relaxed);
    if (result.changed) {
        stats_.classesInstrumented.fetch_add(1, std::memory_order_relaxed);
        stats_.methodsInstrumented.fetch_add(result.instrumented, std::memory_order_relaxed);
    }
}

void Instrumentation::Dump(const char *name, const std::vector<std::uint8_t> &bytes) {
    if (dumpDir_.empty()) return;
    std::string file = dumpDir_ + "/" + name + ".class";
    std::replace(file.begin() + static_cast<std::ptrdiff_t>(dumpDir_.size()) + 1, file.end(), '/', '.');
    if (FILE *f = std::fopen(file.c_str(), "wb")) {
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
    }
}

void Instrumentation::Prepared(JNIEnv *jni, jclass klass) {
    const TId classId = ClassRegistry::Bind(jni, klass);
    // Exact allocation mode: the class itself, for probes that cannot pass it.
    Allocations::BindPreparedClass(jni, classId, klass);
}

void JNICALL Instrumentation::OnClassPrepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread, jclass klass) {
    Sampling::Prepared(klass);
    if (!classes_) return;
    Prepared(jni, klass);
    // A module defined after VMInit (a new module layer) must read the probes' module
    // too, before any code of its classes runs: preparation comes first.
    if (probesModule_ == nullptr || getModule_ == nullptr) return;
    jobject module;
    {
        core::OwnWorkScope own;  // Class.getModule is Java code: not the program's call
        module = jni->CallObjectMethod(klass, getModule_);
    }
    if (jni->ExceptionCheck()) {
        jni->ExceptionClear();
    } else if (module != nullptr) {
        jvmti->AddModuleReads(module, probesModule_);
        jni->DeleteLocalRef(module);
    }
}

// ---- VMInit: wiring the probes --------------------------------------------------------------

void Instrumentation::Start(JNIEnv *jni, bool attached) {
    attached_ = attached;
    if (!wanted_) return;
    // The probes' natives, and every named module's readability of the bootstrap class
    // path's unnamed module (where martini.runtime.Probes lives), before any
    // instrumented code can run.
    jclass probes;
    {
        core::OwnWorkScope own;  // loading a class may run class loaders' Java code
        probes = jni->FindClass(kProbesClass.data());
    }
    if (probes == nullptr) {
        jni->ExceptionClear();
        core::LogLine("cannot load martini.runtime.Probes (martini-probes.jar next to the agent?): no call-graph, exact "
                "allocation or thread-interaction events");
        return;
    }
    Interactions::FindThreadClass(jni);
    probesClass_ = static_cast<jclass>(jni->NewGlobalRef(probes));
    if (!RegisterNatives(jni, probes)) {
        core::LogLine("cannot bind martini.runtime.Probes natives: no call-graph, exact allocation or thread-interaction "
                "events");
        return;
    }
    Allocations::FindProbeMethods(jni, probes);
    Coverage::Start(jni, probes);  // before any class can get coverage probes
    ReadProbesModule(jni, probes);
    instrumenting_.store(true, std::memory_order_release);
    WriteDigests(jni, "before");
    RetransformLoaded(jni, probes);
    WriteDigests(jni, "probed");
}

namespace {

// The two shapes of the probes' natives: (I)V and (Ljava/lang/Object;I)V.
using IdNative = void(JNICALL *)(JNIEnv *, jclass, jint);
using ObjectNative = void(JNICALL *)(JNIEnv *, jclass, jobject, jint);
// The shape is recorded apart from the pointers: with the sanitizers, g++ does not
// take `&Calls::Enter != nullptr` as a constant expression.
enum class Shape { kNone, kId, kObject };
struct ProbeNative {
    Shape shape = Shape::kNone;
    IdNative id = nullptr;
    ObjectNative object = nullptr;
};

// Every native row of kProbeMethods has one function, of its descriptor's shape; the
// Java rows (alloc) none.
constexpr bool NativesMatchProbes(const std::array<ProbeNative, kProbeCount> &natives) {
    for (const ProbeMethod &m : kProbeMethods) {
        const ProbeNative &n = natives[ProbeIndex(m.probe)];
        const bool id = n.shape == Shape::kId && m.descriptor == "(I)V";
        const bool object = n.shape == Shape::kObject && m.descriptor == "(Ljava/lang/Object;I)V";
        const bool none = n.shape == Shape::kNone;
        if (m.native ? !(id || object) : !none) return false;
    }
    return true;
}

}  // namespace

bool Instrumentation::RegisterNatives(JNIEnv *jni, jclass probes) {
    static constexpr std::array<ProbeNative, kProbeCount> kNatives = [] {
        std::array<ProbeNative, kProbeCount> n{};
        n[ProbeIndex(Probe::kEnter)] = {Shape::kId, &Calls::Enter, nullptr};
        n[ProbeIndex(Probe::kLeave)] = {Shape::kId, &Calls::LeaveNormal, nullptr};
        n[ProbeIndex(Probe::kLeaveExceptional)] = {Shape::kId, &Calls::LeaveExceptional, nullptr};
        // Exact allocation mode: Probes.alloc calls `allocated` only for the object's
        // own class; allocByClassId (class files before version 49) leaves that check
        // to the agent. allocArray: after newarray/anewarray/multianewarray.
        n[ProbeIndex(Probe::kAllocated)] = {Shape::kObject, nullptr, &Allocations::Allocated};
        n[ProbeIndex(Probe::kAllocByClassId)] = {Shape::kObject, nullptr, &Allocations::AllocatedByClassId};
        n[ProbeIndex(Probe::kAllocArray)] = {Shape::kObject, nullptr, &Allocations::AllocatedArray};
        // Thread interactions: site probes before notify/start/join/... calls.
        n[ProbeIndex(Probe::kInteraction)] = {Shape::kObject, nullptr, &Interactions::OnSite};
        n[ProbeIndex(Probe::kInteractionStatic)] = {Shape::kId, &Interactions::OnStaticSite, nullptr};
        return n;
    }();
    static_assert(NativesMatchProbes(kNatives), "the probes' natives and kProbeMethods disagree");
    std::vector<JNINativeMethod> natives;
    for (const ProbeMethod &m : kProbeMethods) {
        if (!m.native) continue;
        const ProbeNative &n = kNatives[ProbeIndex(m.probe)];
        void *fn = n.shape == Shape::kId ? reinterpret_cast<void *>(n.id) : reinterpret_cast<void *>(n.object);
        natives.push_back({const_cast<char *>(m.name.data()), const_cast<char *>(m.descriptor.data()), fn});
    }
    if (jni->RegisterNatives(probes, natives.data(), static_cast<jint>(natives.size())) == 0) return true;
    jni->ExceptionClear();
    return false;
}

void Instrumentation::ReadProbesModule(JNIEnv *jni, jclass probes) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    jclass classClass = jni->FindClass("java/lang/Class");
    getModule_ = jni->GetMethodID(classClass, "getModule", "()Ljava/lang/Module;");
    jobject module;
    {
        core::OwnWorkScope own;
        module = jni->CallObjectMethod(probes, getModule_);
    }
    if (module == nullptr) return;
    probesModule_ = jni->NewGlobalRef(module);
    jint count = 0;
    jobject *modules = nullptr;
    if (jvmti->GetAllModules(&count, &modules) == JVMTI_ERROR_NONE) {
        for (jint i = 0; i < count; ++i) jvmti->AddModuleReads(modules[i], module);
        jvmti->Deallocate(reinterpret_cast<unsigned char *>(modules));
    }
}

bool Instrumentation::NeedsRewriting(JNIEnv *jni, jclass klass) {
    // Allocation and site probes depend on the code: with either wanted, every class
    // is retransformed.
    if (Allocations::Exact() || Interactions::Wanted()) return true;
    if (!Calls::Wanted() && !Coverage::Wanted()) return false;
    JvmtiString sig(Vm::Jvmti());
    if (Vm::Jvmti()->GetClassSignature(klass, &sig.p, nullptr) != JVMTI_ERROR_NONE) return true;
    const std::string internal = InternalFromSignature(sig.p);
    if (internal == "java/lang/Object" || internal.rfind("martini/runtime/", 0) == 0) return false;  // never probed
    // With call probes alone, the class is declared from JVMTI (methods, lines,
    // module) and the call-graph filters are asked about its methods; it needs
    // rewriting when some client wants one. A class loaded but not yet prepared has no
    // methods to list: retransformed (about 75 of the 450 classes loaded before VMInit).
    std::vector<DeclaredMethod> methods;
    if (ClassRegistry::DeclareLoaded(jni, klass, internal, methods) == 0) return true;
    const bool calls = Calls::Wanted() && Calls::AskAbout(internal, methods);
    return Coverage::AskAbout(klass, internal, methods) || calls;
}

void Instrumentation::RetransformLoaded(JNIEnv *jni, jclass probes) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    jint loaded = 0;
    jclass *classes = nullptr;
    if (jvmti->GetLoadedClasses(&loaded, &classes) != JVMTI_ERROR_NONE) return;
    // Only those the probes would change (retransforming every JDK class was most of
    // the agent's start-up cost when nobody wants calls).
    std::vector<jclass> declared, modifiable;
    for (jint i = 0; i < loaded; ++i) {
        jboolean ok = JNI_FALSE;
        if (jvmti->IsModifiableClass(classes[i], &ok) == JVMTI_ERROR_NONE && ok &&
            !jni->IsSameObject(classes[i], probes)) {
            declared.push_back(classes[i]);
            if (NeedsRewriting(jni, classes[i])) modifiable.push_back(classes[i]);
        }
    }
    if (!modifiable.empty() &&
        jvmti->RetransformClasses(static_cast<jint>(modifiable.size()), modifiable.data()) != JVMTI_ERROR_NONE) {
        for (jclass c : modifiable) jvmti->RetransformClasses(1, &c);  // one bad class, not all
    }
    if (attached_) {
        core::LogF("attached: %zu loaded classes retransformed for their probes", modifiable.size());
    } else if (Calls::Wanted() && !modifiable.empty()) {
        // What cannot be seen is said: these classes ran before any probe could exist.
        core::LogF("%zu classes loaded during JVM start-up got their probes at VMInit; calls made in them "
                   "before then (the JVM's own start-up) are not counted",
                   modifiable.size());
    }
    // Their methods' jmethodIDs to the records declared just now (they were prepared
    // before ClassPrepare events came), so stacks name the same methods the probes do.
    for (jclass c : declared) Prepared(jni, c);
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(classes));
}

std::vector<std::string> Instrumentation::RunningProbedMethods(JNIEnv *jni) {
    std::vector<std::string> notes;
    if (!Calls::Wanted() || !instrumenting_.load(std::memory_order_acquire)) return notes;
    jvmtiEnv *jvmti = Vm::Jvmti();
    jvmtiStackInfo *stacks = nullptr;
    jint threads = 0;
    if (jvmti->GetAllStackTraces(256, &stacks, &threads) != JVMTI_ERROR_NONE) return notes;
    std::vector<std::string> names;
    for (jint t = 0; t < threads; ++t) {
        for (jint f = 0; f < stacks[t].frame_count; ++f) {
            // The class as the hook declared it (its loader's key), and the method in it
            // by name: the probes' ids.
            const jmethodID jm = stacks[t].frame_buffer[f].method;
            jclass klass = nullptr;
            JvmtiString name(jvmti), desc(jvmti);
            if (jvmti->GetMethodDeclaringClass(jm, &klass) != JVMTI_ERROR_NONE ||
                jvmti->GetMethodName(jm, &name.p, &desc.p, nullptr) != JVMTI_ERROR_NONE) {
                continue;
            }
            const ClassRecord *c = ClassRegistry::Class(ClassRegistry::ClassIdOf(jni, klass));
            jni->DeleteLocalRef(klass);
            if (c == nullptr || !c->probed.load()) continue;
            bool probed = false;
            for (const TId id : ClassRegistry::MethodsOf(*c)) {
                const MethodRecord *m = ClassRegistry::Method(id);
                if (m != nullptr && m->name == name.str() && m->descriptor == desc.str()) probed = Calls::Probed(id);
            }
            if (!probed) continue;
            std::string shown = c->name + "." + name.str();
            if (std::find(names.begin(), names.end(), shown) == names.end()) names.push_back(std::move(shown));
        }
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(stacks));
    if (names.empty()) return notes;
    std::sort(names.begin(), names.end());
    std::string list;
    for (std::size_t i = 0; i < names.size() && i < 20; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 20) list += ", ... (" + std::to_string(names.size() - 20) + " more)";
    notes.push_back(std::to_string(names.size()) + (names.size() == 1 ? " method was" : " methods were") +
                    " already running when attached; the calls in progress then are not counted: " + list);
    return notes;
}

Instrumentation::Restored Instrumentation::Restore(JNIEnv *jni) {
    Restored r;
    jvmtiEnv *jvmti = Vm::Jvmti();
    jint loaded = 0;
    jclass *classes = nullptr;
    if (jvmti->GetLoadedClasses(&loaded, &classes) != JVMTI_ERROR_NONE) return r;
    std::vector<jclass> probed;
    for (jint i = 0; i < loaded; ++i) {
        const ClassRecord *c = ClassRegistry::Class(ClassRegistry::ClassIdOf(jni, classes[i]));
        if (c != nullptr && c->probed.load()) probed.push_back(classes[i]);
    }
    // The hook returns at once once the agent is dead: retransforming starts from the
    // class's original bytes, and nothing is added to them.
    if (!probed.empty() &&
        jvmti->RetransformClasses(static_cast<jint>(probed.size()), probed.data()) != JVMTI_ERROR_NONE) {
        for (jclass c : probed) {
            if (jvmti->RetransformClasses(1, &c) != JVMTI_ERROR_NONE) ++r.failed;
        }
    }
    r.classes = probed.size() - r.failed;
    WriteDigests(jni, "restored");
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(classes));
    instrumenting_.store(false, std::memory_order_release);
    return r;
}

void Instrumentation::WriteDigests(JNIEnv *jni, const char *phase) {
    if (digestFile_.empty()) return;
    jvmtiEnv *jvmti = Vm::Jvmti();
    jint loaded = 0;
    jclass *classes = nullptr;
    if (jvmti->GetLoadedClasses(&loaded, &classes) != JVMTI_ERROR_NONE) return;
    std::vector<std::string> lines;
    for (jint i = 0; i < loaded; ++i) {
        JvmtiString sig(jvmti);
        if (jvmti->GetClassSignature(classes[i], &sig.p, nullptr) != JVMTI_ERROR_NONE) continue;
        const std::string internal = InternalFromSignature(sig.p);
        if (internal.rfind(digestPrefix_, 0) != 0 || internal.rfind("martini/runtime/", 0) == 0) continue;
        jint count = 0;
        jmethodID *methods = nullptr;
        if (jvmti->GetClassMethods(classes[i], &count, &methods) != JVMTI_ERROR_NONE) continue;
        for (jint k = 0; k < count; ++k) {
            JvmtiString name(jvmti), desc(jvmti);
            jint length = 0;
            unsigned char *code = nullptr;
            if (jvmti->GetMethodName(methods[k], &name.p, &desc.p, nullptr) != JVMTI_ERROR_NONE) continue;
            if (jvmti->GetBytecodes(methods[k], &length, &code) != JVMTI_ERROR_NONE) continue;
            std::uint64_t h = 1469598103934665603ull;  // FNV-1a
            for (jint b = 0; b < length; ++b) h = (h ^ code[b]) * 1099511628211ull;
            jvmti->Deallocate(code);
            char hex[17];
            std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
            lines.push_back(std::string(phase) + " " + internal + "." + name.str() + desc.str() + " " + hex);
        }
        jvmti->Deallocate(reinterpret_cast<unsigned char *>(methods));
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(classes));
    (void)jni;
    std::sort(lines.begin(), lines.end());
    if (FILE *f = std::fopen(digestFile_.c_str(), "a")) {
        for (const std::string &l : lines) std::fprintf(f, "%s\n", l.c_str());
        std::fclose(f);
    }
}

void Instrumentation::PrintSummary() {
    const auto &s = stats_;
    const auto d = Vm::Core().GetDiagnostics();
    if (!s.classesUnparsable && !s.methodsLeftAlone && !s.constructorsWithoutAllocProbe && !d.handlerFailures &&
        !d.filterFailures) {
        return;
    }
    core::LogF("%llu classes could not be parsed, %llu methods left alone, %llu constructors without "
               "allocation probe, %llu handler and %llu filter failures contained",
               (unsigned long long)s.classesUnparsable.load(), (unsigned long long)s.methodsLeftAlone.load(),
               (unsigned long long)s.constructorsWithoutAllocProbe.load(), (unsigned long long)d.handlerFailures,
               (unsigned long long)d.filterFailures);
}

void Instrumentation::ReportLostEnters(JNIEnv *jni) {
    if (probesClass_ == nullptr || jni == nullptr) return;
    const jfieldID field = jni->GetStaticFieldID(probesClass_, kLostEntersField.data(), kLostEntersDescriptor.data());
    if (field == nullptr) {
        jni->ExceptionClear();
        return;
    }
    const jint lost = jni->GetStaticIntField(probesClass_, field);
    if (lost <= 0) return;
    core::LogF("%d method calls were not seen: the thread's stack was full when the call's enter probe ran "
               "(StackOverflowError); the methods' call counts are short by that many, enters and leaves stay paired",
               static_cast<int>(lost));
}

}  // namespace martini::jvm
