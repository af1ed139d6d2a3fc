// The JVMTI agent: java -agentpath:<dir>/libmartini-jvmti.so=<config> ...
//
// <config> is the client configuration every provider reads (docs/configuration.md),
// loaded by core::LoadClients. A bad config or a client that does not load prints one
// line naming the problem, and the JVM runs on without that client. Only Agent_OnLoad
// is exported.
//
// This file puts the components together (see jvm_provider.h for the list): in
// Agent_OnLoad each decides whether it is wanted from the clients' registrations,
// adds the capabilities it needs and sets its callbacks; at VMInit the probes are
// wired and the clients told; at VMDeath they write their output.
#include "allocations.h"
#include "calls.h"
#include "compiled_code.h"
#include "control.h"
#include "gc.h"
#include "instrumentation.h"
#include "interactions.h"
#include "jvm_provider.h"
#include "jvm_support.h"
#include "martini/core/client_spec.h"
#include "martini/core/log.h"
#include "monitors.h"
#include "sampling.h"
#include "threads.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace martini::jvm {
namespace {

std::string gOutputDirectory;  // from the configuration; raised at VMInit

// ---- Lifecycle callbacks -------------------------------------------------------------------

void JNICALL OnVmInit(jvmtiEnv *, JNIEnv *jni, jthread) {
    Instrumentation::Start(jni);
    core::Core &core = Vm::Core();
    core.SetLive(true);
    if (ControlWanted(core)) {
        if (const std::string e = StartControl(core); !e.empty()) {
            core::LogLine(e + "; `martini control` will not reach this JVM");
        }
    }
    if (!gOutputDirectory.empty() && core.HasObservers(EV_EC_SET_OUTPUT_DIRECTORY)) {
        SEcSetOutputDirectoryEventData out;
        out.szDirectoryName = gOutputDirectory.c_str();
        out.validData = DR_COMMAND;
        core.Raise<IEcSetOutputDirectoryEventObserver>(out);
    }
    SVmInitEventData d;
    d.threadId = Threads::Current(jni).id;
    d.validData = DR_THREAD_ID;
    core.Raise<IVmInitEventObserver>(d);
    if (Sampling::Wanted()) {
        if (const std::string e = Sampling::Start(jni); !e.empty()) core::LogLine(e);
    }
}

void JNICALL OnVmDeath(jvmtiEnv *, JNIEnv *jni) {
    // After the last Java code (shutdown hooks ran): clients write their output here.
    StopControl();
    Instrumentation::ReportLostEnters(jni);
    Sampling::Stop();  // the samples taken so far are raised before the clients write
    Vm::Core().Shutdown();  // delivery stops for every client at once, then VmShutdown
    Vm::SetDead();
    Instrumentation::PrintSummary();
    Sampling::PrintSummary();
}

// ---- Agent_OnLoad ----------------------------------------------------------------------------

// Timestamps from the TSC, calibrated once (~10 ms), when some client wants them.
void CalibrateClockIfWanted() {
    for (int e = EV_NONE + 1; e < EV_LAST; ++e) {
        if (Vm::Requests(static_cast<TEventType>(e), DR_CPU_TIMESTAMP)) {
            core::Clock::Calibrate();
            return;
        }
    }
}

// Each component decides from the loaded clients' registrations, then asks for only
// the capabilities its events need (holding some costs the JVM even when no event is
// enabled), and sets its callbacks.
void SetUpComponents() {
    Calls::Decide();
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
    Vm::AddCapabilities();
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

jint Load(JavaVM *vm, const char *options) {
    jvmtiEnv *jvmti = nullptr;
    if (vm->GetEnv(reinterpret_cast<void **>(&jvmti), JVMTI_VERSION_11) != JNI_OK || jvmti == nullptr) {
        core::LogLine("this JVM offers no JVMTI 11 environment; the JVM runs without Martini");
        return JNI_OK;
    }
    Vm::Init(vm, jvmti);
    auto *core = new core::Core(*new JvmProvider());  // both live as long as the JVM
    Vm::AttachCore(core);
    const std::string agentDir = core::DirectoryOf(reinterpret_cast<void *>(&Load));
    const core::ClientsLoaded clients = core::LoadClients(*core, options != nullptr ? options : "", agentDir);
    if (!clients.error.empty()) {
        core::LogLine(clients.error + "; the JVM runs without Martini");
        return JNI_OK;
    }
    if (clients.requested == 0) {
        core::LogLine("no client given (-agentpath:libmartini-jvmti.so=<client>[=<options>];... or =@FILE.json; "
                      "docs/configuration.md); the JVM runs without Martini");
        return JNI_OK;
    }
    if (clients.loaded == 0) {
        core::LogLine("no client could be loaded; the JVM runs without Martini");
        return JNI_OK;
    }
    gOutputDirectory = clients.outputDirectory;
    CalibrateClockIfWanted();
    SetUpComponents();
    // Tables frozen before any thread can raise an event; switches on the events
    // clients want (JvmProvider::OnEventDemandChanged).
    core->FinishInit();
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, nullptr);
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, nullptr);
    Threads::EnableEvents();
    Instrumentation::EnableEvents(agentDir);
    Sampling::EnableEvents();
    return JNI_OK;
}

}  // namespace
}  // namespace martini::jvm

extern "C" __attribute__((visibility("default"))) jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *) {
    return martini::jvm::Load(vm, options);
}
