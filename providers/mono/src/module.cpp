// The Mono profiler module: mono --profile=martini:<config> Program.exe
//
// <config> is the client configuration every provider reads (docs/configuration.md),
// loaded by core::LoadClients. A bad config or a client that does not load prints one
// line naming the problem, and the program runs on without that client. Only
// mono_profiler_init_martini is exported (Mono finds the module as
// libmono-profiler-martini.so through LD_LIBRARY_PATH or in its own lib directory).
//
// This file puts the components together (vm.h lists them): in the init function each
// decides whether it is wanted from the clients' registrations, switches on what Mono
// allows only then (allocations, sampling, coverage, debug info) and sets its callbacks; at
// runtime_initialized the clients get VmInit and the events that came before it; at
// runtime_shutdown_end (or at exit, when an unhandled exception ends the process and
// Mono raises no shutdown event, or when SIGTERM, SIGINT or SIGHUP ends it) they get
// VmShutdown and write their output.
#include "calls.h"
#include "compiled_code.h"
#include "coverage.h"
#include "heap.h"
#include "martini/core/client_spec.h"
#include "martini/core/log.h"
#include "martini/core/run.h"
#include "martini/core/signals.h"
#include "metadata.h"
#include "mono_provider.h"
#include "monitors.h"
#include "sampling.h"
#include "threads.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace martini::mono {
namespace {

MartiniProfiler gProfiler;
core::Run *gRun = nullptr;  // lives as long as the process
std::atomic<bool> gShutDown{false};

void OnRuntimeInitialized(MonoProfiler *) {
    Vm::SetRuntimeReady();
    const ThreadContext *ctx = Threads::Current();
    gRun->GoLive(ctx != nullptr ? ctx->id : 0);
    // The events Mono raised before it was initialized (the program's and mscorlib's
    // images, hundreds of classes, the main and finalizer threads, runtime code), in order.
    Vm::GoLive();
    Calls::SetLive(true);
    Sampling::Start();
}

// The runtime is ending: on the normal path after the last managed code (finalizers
// ran); at Environment.Exit with the other threads suspended where they were; at exit
// after an unhandled exception with the runtime still up.
void ShutDown(bool normalPath) {
    if (gShutDown.exchange(true)) return;
    if (Vm::CurrentPhase() == Vm::Phase::kStarting) Vm::GoLive();  // never initialized: deliver what came
    gRun->End([normalPath] {
        Sampling::Stop();
        // Frames still open (Environment.Exit leaves the caller's; the main thread never
        // gets thread_stopped) close as exceptional exits, and their threads end.
        Threads::EndAll(normalPath);
        Calls::SetLive(false);
    });
    Vm::SetDead();
    if (Calls::Wanted() && Calls::AotMethodsUninstrumented() != 0) {
        core::LogF("%llu methods the clients wanted ran as AOT-compiled code, which raises no call events: the "
                   "call graph is missing them (run mono with -O=-aot; `martini run` does unless --keep-aot)",
                   static_cast<unsigned long long>(Calls::AotMethodsUninstrumented()));
    }
    if (const char *v = std::getenv("MARTINI_MONO_VERBOSE"); v != nullptr && *v != '\0' && *v != '0') {
        core::LogF("%llu methods instrumented for calls; %llu leaves without an enter dropped",
                   static_cast<unsigned long long>(Calls::InstrumentedMethods()),
                   static_cast<unsigned long long>(Calls::UnmatchedLeaves()));
    }
    if (Threads::FramesLeftOpen() != 0) {
        core::LogF("%llu frames of threads still running at exit were left open (not reported as left)",
                   static_cast<unsigned long long>(Threads::FramesLeftOpen()));
    }
}

void OnRuntimeShutdownEnd(MonoProfiler *) { ShutDown(true); }
void OnExit() { ShutDown(false); }

void Load(const char *desc) {
    // desc is the whole --profile text: "martini" or "martini:<config>".
    std::string config = desc != nullptr ? desc : "";
    if (config.rfind("martini", 0) == 0) config.erase(0, std::strlen("martini"));
    if (!config.empty() && config[0] == ':') config.erase(0, 1);

    auto *core = new core::Core(*new MonoProvider());  // both live as long as the process
    const std::string moduleDir = core::DirectoryOf(reinterpret_cast<void *>(&Load));
    gRun = new core::Run(*core);
    const core::Run::Loaded loaded =
        gRun->Load(config, moduleDir, "--profile=martini:<client>[=<options>];... or martini:@FILE.json; "
                                      "docs/configuration.md");
    if (loaded.refusal != core::Run::Refusal::kNone) {
        core::LogLine(loaded.message + "; the program runs without Martini");
        return;
    }
    // As Mono's own log profiler: files go to the current directory unless told
    // otherwise (a client's out=, the configuration's "output", `martini run --output`).
    if (gRun->OutputDirectory().empty()) {
        std::error_code ec;
        const std::string cwd = std::filesystem::current_path(ec).string();
        if (!ec) {
            gRun->SetOutputDirectory(cwd);
            if (core->HasObservers(EV_EC_SET_OUTPUT_DIRECTORY)) {
                core::LogLine("no output directory given (--profile=martini:@FILE.json with \"output\", or a "
                              "client's out=DIR): the clients write their files to " + cwd);
            }
        }
    }
    MonoProfilerHandle h = mono_profiler_create(reinterpret_cast<MonoProfiler *>(&gProfiler));
    Vm::Init(h, core);
    // What Mono allows only now: allocation reports, the sampler, coverage counters and
    // debug info (line tables; mono --debug turns it on too: never twice).
    Calls::Decide();
    Monitors::Decide();
    Heap::Decide();
    Sampling::Decide(h);
    Coverage::Decide();
    // Also initializes Mono's debug info when it is off; without a coverage filter it
    // instruments nothing.
    if (Coverage::Wanted() || !mono_debug_enabled()) mono_profiler_enable_coverage();
    Threads::SetCallbacks(h);
    Metadata::SetCallbacks(h);
    Calls::SetCallbacks(h);
    CompiledCode::SetCallbacks(h);
    Heap::SetCallbacks(h);
    Monitors::SetCallbacks(h);
    Sampling::SetCallbacks(h);
    Coverage::SetCallbacks(h);
    mono_profiler_set_runtime_initialized_callback(h, OnRuntimeInitialized);
    mono_profiler_set_runtime_shutdown_end_callback(h, OnRuntimeShutdownEnd);
    core->FinishInit();
    // After the clients' libraries were loaded: runs before their static destructors.
    std::atexit(OnExit);
    // SIGTERM, SIGINT, SIGHUP: Mono lets them end the process at once; the clients
    // write what they collected first.
    if (const std::string e = core::EndRunOnSignals([] { ShutDown(false); }); !e.empty()) {
        core::LogLine("signals cannot be watched (" + e + "); a signal will end the program without its profile");
    }
}

}  // namespace
}  // namespace martini::mono

extern "C" __attribute__((visibility("default"))) void mono_profiler_init_martini(const char *desc) {
    martini::mono::Load(desc);
}
