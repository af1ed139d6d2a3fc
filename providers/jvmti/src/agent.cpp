// The JVMTI agent: java -agentpath:<dir>/libmartini-jvmti.so=<config> ...
//
// <config> is "<client>[=<options>][;<client>[=<options>]]..." (see client_spec.h) or
// "@<file.json>" holding {"clients": [{"client": "callcount", "options": "top=5"}],
// "output": "DIR"}; "output" (optional) is raised to the clients as
// EcSetOutputDirectory at VM start (`martini run --output` uses it).
// A bad config or a client that does not load prints one line naming the problem,
// and the JVM runs on without that client. Only Agent_OnLoad is exported.
#include "control.h"
#include "jvm_provider.h"
#include "probes.h"
#include "martini/core/clock.h"

#include <dlfcn.h>
#include <jni.h>
#include <jvmti.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace martini::jvm {
namespace {

using namespace Martini::MPI;

core::Core *gCore = nullptr;
bool gCallGraph = false;  // some client observes MethodEnter/MethodLeave
// Bytecode instrumentation is on: for the call graph, for exact allocation mode
// (allocation probes in constructors), or for thread interactions and parents (site
// probes). Either needs ClassFileLoadHook, retransformation,
// martini-probes.jar on the bootstrap class path and the probes' natives.
bool gInstrument = false;
jclass gProbesClass = nullptr;
jobject gProbesModule = nullptr;  // the bootstrap class path's unnamed module
jmethodID gGetModule = nullptr;   // Class.getModule()

void Log(const std::string &line) { std::fprintf(stderr, "martini: %s\n", line.c_str()); }

std::string AgentDir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&AgentDir), &info) == 0 || info.dli_fname == nullptr) return ".";
    std::string path = info.dli_fname;
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::vector<std::string> ClientSearchDirs(const std::string &agentDir) {
    std::vector<std::string> dirs;
    if (const char *env = std::getenv("MARTINI_CLIENT_PATH")) {
        std::string s(env);
        for (std::size_t start = 0; start <= s.size();) {
            const auto end = s.find(':', start);
            std::string d = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
            if (!d.empty()) dirs.push_back(d);
            if (end == std::string::npos) break;
            start = end + 1;
        }
    }
    dirs.push_back(agentDir + "/clients");           // installed: <libdir>/martini/clients
    dirs.push_back(agentDir + "/../../clients");     // build tree: build/providers/jvmti -> build/clients
    return dirs;
}

// "@file.json" -> the same list as the text form.
std::string gOutputDirectory;  // from the JSON config's "output"

std::string ReadJsonConfig(const std::string &path, std::vector<core::ClientSpec> &out) {
    std::ifstream in(path);
    if (!in) return "cannot read the configuration file '" + path + "'";
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error &e) {
        return "configuration file '" + path + "': " + e.what();
    }
    if (!j.is_object()) return "configuration file '" + path + "': expected an object with \"clients\"";
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() != "clients" && it.key() != "output") {
            return "configuration file '" + path + "': unknown field \"" + it.key() + "\"";
        }
    }
    if (const auto output = j.find("output"); output != j.end()) {
        if (!output->is_string() || output->get<std::string>().empty()) {
            return "configuration file '" + path + "': \"output\" must be a directory name";
        }
        gOutputDirectory = output->get<std::string>();
    }
    const auto clients = j.find("clients");
    if (clients == j.end() || !clients->is_array()) {
        return "configuration file '" + path + "': \"clients\" must be an array";
    }
    for (std::size_t i = 0; i < clients->size(); ++i) {
        const auto &c = (*clients)[i];
        const std::string where = "configuration file '" + path + "': clients[" + std::to_string(i) + "]";
        if (!c.is_object() || !c.contains("client") || !c["client"].is_string()) {
            return where + " needs a \"client\" string";
        }
        for (auto f = c.begin(); f != c.end(); ++f) {
            if (f.key() != "client" && f.key() != "options") return where + ": unknown field \"" + f.key() + "\"";
        }
        core::ClientSpec spec;
        spec.name = c["client"].get<std::string>();
        if (c.contains("options")) {
            if (!c["options"].is_string()) return where + ": \"options\" must be a string";
            spec.options = c["options"].get<std::string>();
        }
        out.push_back(std::move(spec));
    }
    return {};
}

// ---- The probes' natives: a function for each native row of kProbeMethods -------------

using IdNative = void (*)(JNIEnv *, jclass, jint);                 // (I)V
using ObjectNative = void (*)(JNIEnv *, jclass, jobject, jint);   // (Ljava/lang/Object;I)V
struct ProbeNative {
    IdNative id = nullptr;
    ObjectNative object = nullptr;
};

constexpr std::array<ProbeNative, kProbeCount> kProbeNatives = [] {
    std::array<ProbeNative, kProbeCount> n{};
    n[ProbeIndex(Probe::kEnter)].id = [](JNIEnv *env, jclass, jint id) { gProvider->Enter(env, id); };
    n[ProbeIndex(Probe::kLeave)].id = [](JNIEnv *env, jclass, jint id) { gProvider->Leave(env, id, false); };
    n[ProbeIndex(Probe::kLeaveExceptional)].id = [](JNIEnv *env, jclass, jint id) { gProvider->Leave(env, id, true); };
    // Exact allocation mode: Probes.alloc calls `allocated` only for the object's own
    // class; allocByClassId (class files before version 49) leaves that check to the agent.
    n[ProbeIndex(Probe::kAllocated)].object = [](JNIEnv *env, jclass, jobject o, jint id) {
        gProvider->Allocated(env, o, id, false);
    };
    n[ProbeIndex(Probe::kAllocByClassId)].object = [](JNIEnv *env, jclass, jobject o, jint id) {
        gProvider->Allocated(env, o, id, true);
    };
    n[ProbeIndex(Probe::kAllocArray)].object = [](JNIEnv *env, jclass, jobject a, jint site) {
        gProvider->AllocatedArray(env, a, site);
    };
    // Thread interactions: site probes before notify/start/join/... calls.
    n[ProbeIndex(Probe::kInteraction)].object = [](JNIEnv *env, jclass, jobject o, jint site) {
        gProvider->Interaction(env, o, site);
    };
    n[ProbeIndex(Probe::kInteractionStatic)].id = [](JNIEnv *env, jclass, jint site) {
        gProvider->Interaction(env, nullptr, site);
    };
    return n;
}();

// Every native row has one function, of its descriptor's shape; the Java ones none.
constexpr bool NativesMatchProbes() {
    for (const ProbeMethod &m : kProbeMethods) {
        const ProbeNative &n = kProbeNatives[ProbeIndex(m.probe)];
        const bool id = n.id != nullptr && n.object == nullptr && m.descriptor == "(I)V";
        const bool object = n.object != nullptr && n.id == nullptr && m.descriptor == "(Ljava/lang/Object;I)V";
        const bool none = n.id == nullptr && n.object == nullptr;
        if (m.native ? !(id || object) : !none) return false;
    }
    return true;
}
static_assert(NativesMatchProbes(), "kProbeNatives and kProbeMethods disagree");

std::vector<JNINativeMethod> ProbeNatives() {
    std::vector<JNINativeMethod> natives;
    for (const ProbeMethod &m : kProbeMethods) {
        if (!m.native) continue;
        const ProbeNative &n = kProbeNatives[ProbeIndex(m.probe)];
        void *fn = n.id != nullptr ? reinterpret_cast<void *>(n.id) : reinterpret_cast<void *>(n.object);
        natives.push_back({const_cast<char *>(m.name.data()), const_cast<char *>(m.descriptor.data()), fn});
    }
    return natives;
}

// ---- JVMTI callbacks: each forwards to the provider or raises one event. ----------------

void JNICALL OnVmInit(jvmtiEnv *jvmti, JNIEnv *jni, jthread) {
    if (gInstrument) {
        // The probes' natives, and every named module's readability of the bootstrap
        // class path's unnamed module (where martini.runtime.Probes lives), before any
        // instrumented code can run.
        jclass probes = jni->FindClass(kProbesClass.data());
        if (probes == nullptr) {
            jni->ExceptionClear();
            Log("cannot load martini.runtime.Probes (martini-probes.jar next to the agent?): no call-graph, exact "
                "allocation or thread-interaction events");
        } else {
            std::vector<JNINativeMethod> natives = ProbeNatives();
            gProvider->SetThreadClass(jni);
            gProbesClass = static_cast<jclass>(jni->NewGlobalRef(probes));
            if (jni->RegisterNatives(probes, natives.data(), static_cast<jint>(natives.size())) != 0) {
                jni->ExceptionClear();
                Log("cannot bind martini.runtime.Probes natives: no call-graph, exact allocation or thread-interaction "
                    "events");
            } else {
                // An allocation stack starts in these; the provider leaves them off.
                std::vector<jmethodID> probeMethods;
                for (const ProbeMethod &pm : kProbeMethods) {
                    if (!pm.allocationFrame) continue;
                    if (jmethodID m = jni->GetStaticMethodID(probes, pm.name.data(), pm.descriptor.data())) {
                        probeMethods.push_back(m);
                    }
                    jni->ExceptionClear();
                }
                gProvider->SetProbeMethods(std::move(probeMethods));
                jclass classClass = jni->FindClass("java/lang/Class");
                gGetModule = jni->GetMethodID(classClass, "getModule", "()Ljava/lang/Module;");
                jobject probesModule = jni->CallObjectMethod(probes, gGetModule);
                if (probesModule != nullptr) gProbesModule = jni->NewGlobalRef(probesModule);
                jint count = 0;
                jobject *modules = nullptr;
                if (probesModule != nullptr && jvmti->GetAllModules(&count, &modules) == JVMTI_ERROR_NONE) {
                    for (jint i = 0; i < count; ++i) jvmti->AddModuleReads(modules[i], probesModule);
                    jvmti->Deallocate(reinterpret_cast<unsigned char *>(modules));
                }
                gProvider->SetInstrumenting(true);
                // Classes loaded before now: retransform them, so the filters see
                // their methods too (JDK classes included).
                jint loaded = 0;
                jclass *classes = nullptr;
                if (jvmti->GetLoadedClasses(&loaded, &classes) == JVMTI_ERROR_NONE) {
                    // Only those the probes would change: with call probes alone, a
                    // class no filter wants a method of is declared from JVMTI and left
                    // as it is (retransforming every JDK class was most of the agent's
                    // start-up cost when nobody wants calls).
                    std::vector<jclass> declared, modifiable;
                    for (jint i = 0; i < loaded; ++i) {
                        jboolean ok = JNI_FALSE;
                        if (jvmti->IsModifiableClass(classes[i], &ok) == JVMTI_ERROR_NONE && ok &&
                            !jni->IsSameObject(classes[i], probes)) {
                            declared.push_back(classes[i]);
                            if (gProvider->NeedsRewriting(jni, classes[i])) modifiable.push_back(classes[i]);
                        }
                    }
                    if (!modifiable.empty() &&
                        jvmti->RetransformClasses(static_cast<jint>(modifiable.size()), modifiable.data()) !=
                            JVMTI_ERROR_NONE) {
                        for (jclass c : modifiable) jvmti->RetransformClasses(1, &c);  // one bad class, not all
                    }
                    // Their methods' jmethodIDs to the records declared just now (they
                    // were prepared before ClassPrepare events came), so stacks name
                    // the same methods the probes do.
                    for (jclass c : declared) gProvider->OnClassPrepare(jni, c);
                    jvmti->Deallocate(reinterpret_cast<unsigned char *>(classes));
                }
            }
        }
    }
    gCore->SetLive(true);
    if (gCore->HasObservers(EV_EC_START) || gCore->HasObservers(EV_EC_STOP)) {
        if (const std::string e = StartControl(*gCore); !e.empty()) Log(e + "; `martini control` will not reach this JVM");
    }
    if (!gOutputDirectory.empty() && gCore->HasObservers(EV_EC_SET_OUTPUT_DIRECTORY)) {
        SEcSetOutputDirectoryEventData out;
        out.szDirectoryName = gOutputDirectory.c_str();
        out.validData = DR_COMMAND;
        gCore->Raise<IEcSetOutputDirectoryEventObserver>(out);
    }
    SVmInitEventData d;
    d.threadId = gProvider->ContextOf(jni).id;
    d.validData = DR_THREAD_ID;
    gCore->Raise<IVmInitEventObserver>(d);
}

void JNICALL OnVmDeath(jvmtiEnv *, JNIEnv *) {
    // After the last Java code (shutdown hooks ran): clients write their output here.
    StopControl();
    gCore->Raise<IVmShutdownEventObserver>();
    gProvider->SetDead();
    gCore->SetLive(false);
    const auto &s = gProvider->GetStats();
    const auto d = gCore->GetDiagnostics();
    if (s.classesUnparsable || s.methodsLeftAlone || s.constructorsWithoutAllocProbe || d.handlerFailures ||
        d.filterFailures) {
        std::fprintf(stderr,
                     "martini: %llu classes could not be parsed, %llu methods left alone, %llu constructors without "
                     "allocation probe, %llu handler and %llu filter failures contained\n",
                     (unsigned long long)s.classesUnparsable.load(), (unsigned long long)s.methodsLeftAlone.load(),
                     (unsigned long long)s.constructorsWithoutAllocProbe.load(), (unsigned long long)d.handlerFailures,
                     (unsigned long long)d.filterFailures);
    }
}

void JNICALL OnClassFileLoadHook(jvmtiEnv *jvmti, JNIEnv *jni, jclass redefined, jobject loader, const char *name,
                                 jobject protectionDomain, jint length, const unsigned char *data, jint *newLength,
                                 unsigned char **newData) {
    if (gProvider->Dead() || length <= 0) return;
    std::vector<std::uint8_t> out =
        gProvider->OnClassFile(jni, loader, protectionDomain, name, {data, static_cast<std::size_t>(length)}, redefined);
    if (out.empty()) return;
    unsigned char *buffer = nullptr;
    if (jvmti->Allocate(static_cast<jlong>(out.size()), &buffer) != JVMTI_ERROR_NONE) return;
    std::memcpy(buffer, out.data(), out.size());
    *newLength = static_cast<jint>(out.size());
    *newData = buffer;
}

void JNICALL OnClassPrepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread, jclass klass) {
    gProvider->OnClassPrepare(jni, klass);
    // A module defined after VMInit (a new module layer) must read the probes' module
    // too, before any code of its classes runs: preparation comes first.
    if (gProbesModule != nullptr && gGetModule != nullptr) {
        jobject module = jni->CallObjectMethod(klass, gGetModule);
        if (jni->ExceptionCheck()) {
            jni->ExceptionClear();
        } else if (module != nullptr) {
            jvmti->AddModuleReads(module, gProbesModule);
            jni->DeleteLocalRef(module);
        }
    }
}
void JNICALL OnThreadStart(jvmtiEnv *, JNIEnv *jni, jthread t) { gProvider->OnThreadStart(jni, t); }
void JNICALL OnThreadEnd(jvmtiEnv *, JNIEnv *jni, jthread t) { gProvider->OnThreadEnd(jni, t); }

// GC events: no JNI, no JVMTI calls but raw monitors here (the VM is at a safepoint).
void JNICALL OnGcStart(jvmtiEnv *) {
    SGcStartEventData d;
    if (gCore->RequestedData(EV_GC_START) & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = core::Clock::NowNs();
        d.validData = DR_CPU_TIMESTAMP;
    }
    gCore->Raise<IGcStartEventObserver>(d);
}
void JNICALL OnGcFinish(jvmtiEnv *) {
    SGcEndEventData d;
    if (gCore->RequestedData(EV_GC_END) & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = core::Clock::NowNs();
        d.validData = DR_CPU_TIMESTAMP;
    }
    gCore->Raise<IGcEndEventObserver>(d);
}

// Sampled allocation mode. (Exact mode: the allocation probes, Probes.allocated.)
void JNICALL OnSampledObjectAlloc(jvmtiEnv *, JNIEnv *jni, jthread, jobject object, jclass klass, jlong size) {
    const TId classId = gProvider->ClassIdOf(jni, klass);
    const ClientMask mask = gProvider->InterestOf(classId, EG_HEAP);
    if (mask == 0) return;
    gProvider->RaiseObjectAlloc(jni, object, classId, mask, static_cast<std::uint64_t>(size), false);
}

void JNICALL OnObjectFree(jvmtiEnv *, jlong tag) {
    const auto [known, record] = gProvider->ForgetObject(static_cast<TId>(tag));
    if (!known) return;
    SObjectFreeEventData d;
    d.objectId = static_cast<TId>(tag);
    d.classId = record.classId;
    d.uiObjectSize = record.size;
    d.validData = DR_OBJECT_ID | DR_CLASS_ID | DR_OBJECT_SIZE;
    gCore->Raise<IObjectFreeEventObserver>(d);
}

// Fills the common monitor-event items; returns the interested clients.
template <class Data>
ClientMask MonitorData(JNIEnv *jni, jobject object, Data &d, TEventType event) {
    jclass klass = jni->GetObjectClass(object);
    d.classId = gProvider->ClassIdOf(jni, klass);
    jni->DeleteLocalRef(klass);
    d.threadId = gProvider->ContextOf(jni).id;
    d.objectId = gProvider->TagOf(jni, object, true);
    d.validData = DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID;
    if (gCore->RequestedData(event) & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = core::Clock::NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    return gProvider->InterestOf(d.classId, EG_MONITOR);
}

void JNICALL OnMonitorWait(jvmtiEnv *, JNIEnv *jni, jthread, jobject object, jlong timeout) {
    SMonitorWaitEventData d;
    const ClientMask mask = MonitorData(jni, object, d, EV_MONITOR_WAIT);
    d.timeoutMs = timeout;
    d.validData |= DR_MONITOR_TIMEOUT;
    gProvider->ContextOf(jni).waitRaised = true;
    gCore->Raise<IMonitorWaitEventObserver>(d, mask);
}

void JNICALL OnMonitorWaited(jvmtiEnv *, JNIEnv *jni, jthread, jobject object, jboolean timedOut) {
    ThreadContext &ctx = gProvider->ContextOf(jni);
    if (!ctx.waitRaised) return;
    ctx.waitRaised = false;
    SMonitorWaitedEventData d;
    const ClientMask mask = MonitorData(jni, object, d, EV_MONITOR_WAITED);
    d.bTimedOut = timedOut;
    d.validData |= DR_MONITOR_TIMEOUT;
    gCore->Raise<IMonitorWaitedEventObserver>(d, mask);
}

void JNICALL OnContendedEnter(jvmtiEnv *jvmti, JNIEnv *jni, jthread, jobject object) {
    SContendedMonitorEnterEventData d;
    const ClientMask mask = MonitorData(jni, object, d, EV_CONTENDED_MONITOR_ENTER);
    if (mask != 0 && (gCore->RequestedData(EV_CONTENDED_MONITOR_ENTER) & DR_MONITOR_OWNER_THREAD_ID)) {
        // The holder now (it may have let go already: then none is given).
        jvmtiMonitorUsage usage{};
        if (jvmti->GetObjectMonitorUsage(object, &usage) == JVMTI_ERROR_NONE) {
            if (usage.owner != nullptr) {
                d.ownerThreadId = gProvider->ThreadIdOf(jni, usage.owner);
                if (d.ownerThreadId != 0) d.validData |= DR_MONITOR_OWNER_THREAD_ID;
                jni->DeleteLocalRef(usage.owner);
            }
            for (jint i = 0; i < usage.waiter_count; ++i) jni->DeleteLocalRef(usage.waiters[i]);
            for (jint i = 0; i < usage.notify_waiter_count; ++i) jni->DeleteLocalRef(usage.notify_waiters[i]);
            jvmti->Deallocate(reinterpret_cast<unsigned char *>(usage.waiters));
            jvmti->Deallocate(reinterpret_cast<unsigned char *>(usage.notify_waiters));
        }
    }
    gProvider->ContextOf(jni).contendRaised = true;
    gCore->Raise<IContendedMonitorEnterEventObserver>(d, mask);
}

void JNICALL OnContendedEntered(jvmtiEnv *, JNIEnv *jni, jthread, jobject object) {
    ThreadContext &ctx = gProvider->ContextOf(jni);
    if (!ctx.contendRaised) return;
    ctx.contendRaised = false;
    SContendedMonitorEnteredEventData d;
    const ClientMask mask = MonitorData(jni, object, d, EV_CONTENDED_MONITOR_ENTERED);
    gCore->Raise<IContendedMonitorEnteredEventObserver>(d, mask);
}

void JNICALL OnCompiledMethodLoad(jvmtiEnv *, jmethodID method, jint size, const void *address, jint,
                                  const jvmtiAddrLocationMap *, const void *) {
    const TId id = gProvider->MethodIdOf(method);
    MethodRecord *m = gProvider->Methods().Get(id);
    if (m == nullptr) return;
    m->codeSize.store(static_cast<unsigned>(size), std::memory_order_relaxed);
    m->codeAddress.store(reinterpret_cast<std::uintptr_t>(address), std::memory_order_release);
    SJittedMethodLoadedEventData d;
    d.methodId = id;
    d.uiCodeAddress = reinterpret_cast<UIOP>(address);
    d.uiCodeSize = static_cast<unsigned>(size);
    d.validData = DR_METHOD_ID | DR_METHOD_CODE;
    gCore->Raise<IJittedMethodLoadedEventObserver>(d);
}

void JNICALL OnCompiledMethodUnload(jvmtiEnv *, jmethodID method, const void *address) {
    const TId id = gProvider->MethodIdOf(method);
    MethodRecord *m = gProvider->Methods().Get(id);
    if (m == nullptr) return;
    SJittedMethodUnloadedEventData d;
    d.methodId = id;
    d.uiCodeAddress = reinterpret_cast<UIOP>(address);
    d.uiCodeSize = m->codeSize.load(std::memory_order_relaxed);
    d.validData = DR_METHOD_ID | DR_METHOD_CODE;
    m->codeAddress.store(0, std::memory_order_release);
    gCore->Raise<IJittedMethodUnloadedEventObserver>(d);
}

void JNICALL OnDynamicCodeGenerated(jvmtiEnv *, const char *name, const void *address, jint length) {
    SDynamicCodeGeneratedEventData d;
    d.szCodeName = name;
    d.uiCodeAddress = reinterpret_cast<UIOP>(address);
    d.uiCodeSize = static_cast<unsigned>(length);
    d.validData = DR_CODE_NAME | DR_METHOD_CODE;
    gCore->Raise<IDynamicCodeGeneratedEventObserver>(d);
}

jint Load(JavaVM *vm, const char *options) {
    jvmtiEnv *jvmti = nullptr;
    if (vm->GetEnv(reinterpret_cast<void **>(&jvmti), JVMTI_VERSION_11) != JNI_OK || jvmti == nullptr) {
        Log("this JVM offers no JVMTI 11 environment; the JVM runs without Martini");
        return JNI_OK;
    }
    std::vector<core::ClientSpec> specs;
    const std::string config = options ? options : "";
    const std::string parseError = !config.empty() && config[0] == '@' ? ReadJsonConfig(config.substr(1), specs)
                                                                        : core::ParseClientList(config, specs);
    if (!parseError.empty()) {
        Log(parseError + "; the JVM runs without Martini");
        return JNI_OK;
    }
    if (specs.empty()) {
        Log("no client given (-agentpath:libmartini-jvmti.so=<client>[=<options>];...); the JVM runs without Martini");
        return JNI_OK;
    }
    gProvider = new JvmProvider(vm, jvmti);
    gCore = new core::Core(*gProvider);
    gProvider->AttachCore(gCore);
    if (const char *dump = std::getenv("MARTINI_DUMP_CLASSES")) gProvider->SetDumpDirectory(dump);
    const std::string agentDir = AgentDir();
    const auto dirs = ClientSearchDirs(agentDir);
    unsigned loaded = 0;
    for (auto &spec : specs) {
        if (const std::string err = core::ResolveClientPath(spec, dirs); !err.empty()) {
            Log(err + "; the JVM runs on without it");
            continue;
        }
        if (gCore->LoadClient(spec).ok()) ++loaded;
    }
    if (loaded == 0) {
        Log("no client could be loaded; the JVM runs without Martini");
        return JNI_OK;
    }

    // Timestamps from the TSC, calibrated once (~10 ms), when some client wants them.
    for (int e = EV_NONE + 1; e < EV_LAST; ++e) {
        if (gCore->RequestedData(static_cast<TEventType>(e)) & DR_CPU_TIMESTAMP) {
            core::Clock::Calibrate();
            break;
        }
    }

    // Capabilities: only those the loaded clients' events need (holding some costs
    // the JVM even when no event is enabled).
    auto wants = [](TEventType e) { return gCore->HasObservers(e); };
    gCallGraph = wants(EV_METHOD_ENTER) || wants(EV_METHOD_LEAVE);
    // The clients asked for their allocation sampling interval in MPICL_Instantiate:
    // interval 0 (every allocation) means exact mode, decided now, before any class loads.
    const bool exactAllocations = gProvider->DecideAllocationMode(wants(EV_OBJECT_ALLOC));
    // Thread interactions and thread parents come from site probes before the calls of
    // Object.notify/notifyAll and Thread.start/join/sleep/interrupt.
    const bool interactions = wants(EV_THREAD_INTERACTION);
    const bool parents = wants(EV_THREAD_START) && (gCore->RequestedData(EV_THREAD_START) & DR_THREAD_PARENT_ID);
    gProvider->SetInteractionMode(interactions, parents);
    gInstrument = gCallGraph || exactAllocations || interactions || parents;
    const bool classes = gInstrument || wants(EV_CLASS_LOAD) || wants(EV_NEW_METHOD);
    jvmtiCapabilities caps{};
    caps.can_get_line_numbers = 1;
    caps.can_get_source_file_name = 1;
    if (gInstrument) {
        caps.can_retransform_classes = 1;
        caps.can_retransform_any_class = 1;
    }
    if (gCore->RequestedData(EV_METHOD_ENTER) & DR_THREAD_CPU_TIME ||
        gCore->RequestedData(EV_METHOD_LEAVE) & DR_THREAD_CPU_TIME) {
        caps.can_get_current_thread_cpu_time = 1;
    }
    caps.can_get_thread_cpu_time = 1;
    if (wants(EV_GC_START) || wants(EV_GC_END)) caps.can_generate_garbage_collection_events = 1;
    if (wants(EV_OBJECT_ALLOC) || wants(EV_OBJECT_FREE)) {
        // Exact mode never enables SampledObjectAlloc: the allocation probes report.
        if (!exactAllocations) caps.can_generate_sampled_object_alloc_events = 1;
        caps.can_tag_objects = 1;
    }
    if (wants(EV_OBJECT_FREE)) caps.can_generate_object_free_events = 1;
    if (interactions || parents) caps.can_tag_objects = 1;  // receivers' ids; started threads' parents
    if (wants(EV_MONITOR_WAIT) || wants(EV_MONITOR_WAITED) || wants(EV_CONTENDED_MONITOR_ENTER) ||
        wants(EV_CONTENDED_MONITOR_ENTERED)) {
        caps.can_generate_monitor_events = 1;
        caps.can_tag_objects = 1;
        if (gCore->RequestedData(EV_CONTENDED_MONITOR_ENTER) & DR_MONITOR_OWNER_THREAD_ID) caps.can_get_monitor_info = 1;
    }
    if (wants(EV_JITTED_METHOD_LOADED) || wants(EV_JITTED_METHOD_UNLOADED) || wants(EV_DYNAMIC_CODE_GENERATED)) {
        caps.can_generate_compiled_method_load_events = 1;
    }
    if (jvmti->AddCapabilities(&caps) != JVMTI_ERROR_NONE) {
        Log("the JVM refused some capabilities; some events will be missing");
    }
    if (caps.can_generate_sampled_object_alloc_events) gProvider->ApplyAllocationSampling();

    jvmtiEventCallbacks callbacks{};
    callbacks.VMInit = OnVmInit;
    callbacks.VMDeath = OnVmDeath;
    callbacks.ClassFileLoadHook = OnClassFileLoadHook;
    callbacks.ClassPrepare = OnClassPrepare;
    callbacks.ThreadStart = OnThreadStart;
    callbacks.ThreadEnd = OnThreadEnd;
    callbacks.GarbageCollectionStart = OnGcStart;
    callbacks.GarbageCollectionFinish = OnGcFinish;
    callbacks.SampledObjectAlloc = OnSampledObjectAlloc;
    callbacks.ObjectFree = OnObjectFree;
    callbacks.MonitorWait = OnMonitorWait;
    callbacks.MonitorWaited = OnMonitorWaited;
    callbacks.MonitorContendedEnter = OnContendedEnter;
    callbacks.MonitorContendedEntered = OnContendedEntered;
    callbacks.CompiledMethodLoad = OnCompiledMethodLoad;
    callbacks.CompiledMethodUnload = OnCompiledMethodUnload;
    callbacks.DynamicCodeGenerated = OnDynamicCodeGenerated;
    jvmti->SetEventCallbacks(&callbacks, sizeof callbacks);

    // Tables frozen before any thread can raise an event; switches on the events
    // clients want (JvmProvider::OnEventDemandChanged).
    gCore->FinishInit();

    auto enable = [&](jvmtiEvent e) { jvmti->SetEventNotificationMode(JVMTI_ENABLE, e, nullptr); };
    enable(JVMTI_EVENT_VM_INIT);
    enable(JVMTI_EVENT_VM_DEATH);
    enable(JVMTI_EVENT_THREAD_START);
    enable(JVMTI_EVENT_THREAD_END);
    if (classes) {
        enable(JVMTI_EVENT_CLASS_FILE_LOAD_HOOK);
        enable(JVMTI_EVENT_CLASS_PREPARE);
    }
    if (gInstrument) {
        const std::string jar = agentDir + "/martini-probes.jar";
        if (jvmti->AddToBootstrapClassLoaderSearch(jar.c_str()) != JVMTI_ERROR_NONE) {
            Log("cannot add " + jar + " to the bootstrap class path: no call-graph, exact allocation or "
                "thread-interaction events");
            gCallGraph = false;
            gInstrument = false;
        }
    }
    return JNI_OK;
}

}  // namespace
}  // namespace martini::jvm

extern "C" __attribute__((visibility("default"))) jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *) {
    return martini::jvm::Load(vm, options);
}
