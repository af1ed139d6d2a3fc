// The JVMTI agent, loaded at start-up or attached to a running JVM:
//   java -agentpath:<dir>/libmartini-jvmti.so=<config> ...     (Agent_OnLoad)
//   martini attach PID --client ...                            (Agent_OnAttach)
//
// <config> is the client configuration every provider reads (docs/configuration.md),
// loaded by core::LoadClients. A bad config or a client that does not load prints one
// line naming the problem, and the JVM runs on without that client. Only Agent_OnLoad
// and Agent_OnAttach are exported.
//
// This file puts the components together (see jvm_provider.h for the list): at load
// or attach each decides whether it is wanted from the clients' registrations, adds
// the capabilities it needs and sets its callbacks; at VMInit (at once when attached)
// the probes are wired and the clients told; at VMDeath they write their output.
// `martini control PID detach|terminate` ends a run early (Detach below): the classes
// get their original bytes back, the JVMTI environment is given back, and a later
// attach starts a new run in the same JVM.
#include "allocations.h"
#include "calls.h"
#include "coverage.h"
#include "classes.h"
#include "compiled_code.h"
#include "control.h"
#include "gc.h"
#include "instrumentation.h"
#include "interactions.h"
#include "jvm_provider.h"
#include "jvm_support.h"
#include "martini/core/client_spec.h"
#include "martini/core/log.h"
#include "martini/core/run.h"
#include "monitors.h"
#include "sampling.h"
#include "threads.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace martini::jvm {
namespace {

core::Run *gRun = nullptr;  // the run of the current load or attach; lives as long as the JVM

// One run at a time: loaded or attached (kActive) until VMDeath or a detach.
enum class RunState { kNone, kActive, kDetached };
std::mutex gLifecycle;  // load/attach, detach and VMDeath, one at a time
RunState gState = RunState::kNone;
std::vector<std::string> gAttachNotes;  // said again in the detach's reply

std::string Detach(core::Core &core, std::vector<std::string> &notes);

// ---- Lifecycle callbacks -------------------------------------------------------------------

// VMInit, or at once when attached: the probes wired, the clients told the JVM is live.
void GoLive(JNIEnv *jni, bool attached) {
    Instrumentation::Start(jni, attached);
    gRun->GoLive(Threads::Current(jni).id, attached);
    StartControl(Vm::Core(), Detach);
    // Sampling starts after the clients are live (at VMInit, or at once when attached).
    if (Sampling::Wanted()) {
        if (const std::string e = Sampling::Start(jni); !e.empty()) core::LogLine(e);
    }
}

void JNICALL OnVmInit(jvmtiEnv *, JNIEnv *jni, jthread) { GoLive(jni, false); }

void JNICALL OnVmDeath(jvmtiEnv *, JNIEnv *jni) {
    // After the last Java code (shutdown hooks ran): clients write their output here.
    StopControl();
    std::lock_guard lock(gLifecycle);
    if (gState != RunState::kActive) return;  // detached: nothing of Martini's is left
    Instrumentation::ReportLostEnters(jni);
    gRun->End(Sampling::Stop);  // the samples taken so far are raised before the clients write
    Vm::SetDead();
    Instrumentation::PrintSummary();
    Sampling::PrintSummary();
}

// ---- Detach ---------------------------------------------------------------------------------

// `martini control PID detach|terminate`, on the control thread (a JVM thread): the
// clients write their outputs, every probe goes, and the JVM runs on at full speed.
std::string Detach(core::Core &, std::vector<std::string> &notes) {
    std::lock_guard lock(gLifecycle);
    if (gState != RunState::kActive) return "Martini is not running in this JVM";
    // The samples taken so far are raised before the clients write; then EcDetach and
    // VmShutdown: the outputs.
    gRun->Detach(Sampling::Stop);
    Vm::SetDead();              // the probes and hooks do nothing from here
    // A probe that read "not dead" just before may still be on its way through.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    JNIEnv *jni = Vm::Jni();
    if (jni != nullptr) {
        const Instrumentation::Restored restored = Instrumentation::Restore(jni);
        notes.push_back(std::to_string(restored.classes) + " classes restored to their original bytes" +
                        (restored.failed != 0 ? ", " + std::to_string(restored.failed) + " could not be" : ""));
    }
    Instrumentation::PrintSummary();
    Sampling::PrintSummary();
    Threads::ForgetStacks();
    ClassRegistry::ForgetInterest();
    Allocations::ForgetDecision();
    // Every event off and every capability given back (the JVM runs at full speed);
    // the next attach takes a new environment.
    Vm::Jvmti()->DisposeEnvironment();
    notes.insert(notes.begin(), gAttachNotes.begin(), gAttachNotes.end());
    gAttachNotes.clear();
    gState = RunState::kDetached;
    return "";
}

// ---- Agent_OnLoad / Agent_OnAttach ------------------------------------------------------------

// Each component decides from the loaded clients' registrations, then asks for only
// the capabilities its events need (holding some costs the JVM even when no event is
// enabled), and sets its callbacks.
void SetUpComponents(bool live) {
    Calls::Decide();
    Coverage::Decide();
    // The clients asked for their allocation sampling interval in MPICL_Instantiate:
    // interval 0 (every allocation) means exact mode, decided now, before any class loads.
    Allocations::Decide();
    Interactions::Decide();
    Sampling::Decide();
    Instrumentation::Decide();
    jvmtiCapabilities &caps = Vm::Capabilities();
    Instrumentation::AddCapabilities(caps);
    Calls::AddCapabilities(caps);
    Threads::AddCapabilities(caps);
    Gc::AddCapabilities(caps);
    Allocations::AddCapabilities(caps);
    Interactions::AddCapabilities(caps);
    Monitors::AddCapabilities(caps);
    CompiledCode::AddCapabilities(caps);
    Sampling::AddCapabilities(caps);
    Vm::AddCapabilities(live);
    Allocations::CapabilitiesAdded();

    jvmtiEventCallbacks callbacks{};
    callbacks.VMInit = OnVmInit;
    callbacks.VMDeath = OnVmDeath;
    Instrumentation::SetCallbacks(callbacks);
    Threads::SetCallbacks(callbacks);
    Gc::SetCallbacks(callbacks);
    Allocations::SetCallbacks(callbacks);
    Monitors::SetCallbacks(callbacks);
    CompiledCode::SetCallbacks(callbacks);
    Sampling::SetCallbacks(callbacks);
    Vm::Jvmti()->SetEventCallbacks(&callbacks, sizeof callbacks);
}

// Agent_OnLoad (live false) and Agent_OnAttach (live true). Returns JNI_OK, or JNI_ERR
// when attached and nothing could be started (the attach then reports a failure).
jint Load(JavaVM *vm, const char *options, bool live) {
    std::lock_guard lock(gLifecycle);
    const char *runs = live ? "the JVM runs on without Martini" : "the JVM runs without Martini";
    if (gState == RunState::kActive) {
        core::LogLine("Martini is already running in this JVM (detach first: martini control PID detach); "
                      "this attach is refused");
        return JNI_ERR;
    }
    jvmtiEnv *jvmti = nullptr;
    if (vm->GetEnv(reinterpret_cast<void **>(&jvmti), JVMTI_VERSION_11) != JNI_OK || jvmti == nullptr) {
        core::LogLine(std::string("this JVM offers no JVMTI 11 environment; ") + runs);
        return live ? JNI_ERR : JNI_OK;
    }
    Vm::Init(vm, jvmti);  // a new environment, also when attached again after a detach
    auto *core = new core::Core(*new JvmProvider());  // both live as long as the JVM
    Vm::AttachCore(core);
    const std::string agentDir = core::DirectoryOf(reinterpret_cast<void *>(&Load));
    gRun = new core::Run(*core);
    const core::Run::Loaded loaded =
        gRun->Load(options != nullptr ? options : "", agentDir,
                   "-agentpath:libmartini-jvmti.so=<client>[=<options>];... or =@FILE.json; docs/configuration.md");
    if (loaded.refusal != core::Run::Refusal::kNone) {
        core::LogLine(loaded.message + "; " + runs);
        if (live) jvmti->DisposeEnvironment();
        return live ? JNI_ERR : JNI_OK;
    }
    SetUpComponents(live);
    // Tables frozen before any thread can raise an event; switches on the events
    // clients want (JvmProvider::OnEventDemandChanged).
    core->FinishInit();
    Threads::EnableEvents();
    Instrumentation::EnableEvents(agentDir);
    Sampling::EnableEvents();
    gState = RunState::kActive;
    if (!live) {
        jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, nullptr);
        jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, nullptr);
        return JNI_OK;
    }
    // Attached: the JVM is live already, and this is one of its threads.
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, nullptr);
    JNIEnv *jni = Vm::Jni();
    if (jni == nullptr) {
        core::LogLine(std::string("the attach thread has no JNI environment; ") + runs);
        jvmti->DisposeEnvironment();
        return JNI_ERR;
    }
    GoLive(jni, true);
    gAttachNotes = Instrumentation::RunningProbedMethods(jni);
    for (const std::string &n : gAttachNotes) core::LogLine(n);
    return JNI_OK;
}

}  // namespace
}  // namespace martini::jvm

extern "C" __attribute__((visibility("default"))) jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *) {
    return martini::jvm::Load(vm, options, false);
}

extern "C" __attribute__((visibility("default"))) jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *) {
    return martini::jvm::Load(vm, options, true);
}
