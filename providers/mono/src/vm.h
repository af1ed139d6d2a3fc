// Vm: the one owner of this Mono runtime's environment for the module's components
// (the profiler handle, the core) and of what they share: the phase (before VmInit,
// live, dead), the queue of events that came before VmInit, and the provider's own
// runtime threads.
//
// Written in mono_profiler_init_martini before any event can come, except the phase
// (atomic) and the queue (mutex_). Components own their callbacks, state and locks:
//
//   threads.h        Threads: ThreadStart/End, ids, names, ThreadContext (IE TLS)
//   calls.h          Calls: the call-instrumentation filter, MethodEnter/Leave, shadow stacks
//   metadata.h       Metadata: modules (images), classes, methods, line tables
//   heap.h           Heap: ObjectAlloc, GcStart/End, GcMovedReferences, RunGc, objects
//   monitors.h       Monitors: contended enter/entered, MonitorWait/Waited, interactions
//   compiled_code.h  CompiledCode: JittedMethodLoaded, DynamicCodeGenerated, code by address
//   sampling.h       Sampling: SampleHit from Mono's profiler signal, through a lock-free buffer
//   sample_clock.h   SampleClock: CPU mode's per-thread clocks (perf task-clock, CPU timers)
//   coverage.h       Coverage: block counts through Mono's coverage instrumentation
//   module.cpp       the entry point and the lifecycle (VmInit, VmShutdown, atexit)
#pragma once

#include "martini/core/clock.h"
#include "martini/core/core.h"
#include "martini/core/log.h"
#include "mono_support.h"

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

namespace martini::mono {

using core::ClientMask;
using core::kAllClients;
using namespace Martini::MPI;  // private headers: MPI's names are the provider's vocabulary

// The profiler structure Mono hands back to every callback (unused: all state is static).
struct MartiniProfiler {
    int unused = 0;
};

class Vm {
public:
    enum class Phase { kStarting, kLive, kDead };

    static void Init(MonoProfilerHandle handle, core::Core *core) {
        handle_ = handle;
        core_ = core;
    }
    static MonoProfilerHandle Handle() { return handle_; }
    static core::Core &Core() { return *core_; }
    static bool Wants(TEventType e) { return core_->HasObservers(e); }
    static bool Requests(TEventType e, BitSet item) { return (core_->RequestedData(e) & item) != 0; }

    static Phase CurrentPhase() { return phase_.load(std::memory_order_acquire); }
    static bool Live() { return CurrentPhase() == Phase::kLive; }
    static bool Dead() { return CurrentPhase() == Phase::kDead; }
    static void SetDead() { phase_.store(Phase::kDead, std::memory_order_release); }
    // From runtime_initialized on (before VmInit reaches the clients): the runtime
    // takes requests that run its code (a GC, a thread attach).
    static bool RuntimeReady() { return runtimeReady_.load(std::memory_order_acquire); }
    static void SetRuntimeReady() { runtimeReady_.store(true, std::memory_order_release); }

    // An event Mono raised: delivered now when live, queued when it came before VmInit
    // (replayed in order right after VmInit), dropped after VmShutdown. `raise` runs on
    // this thread now or at VmInit on the main thread; it must not hold pointers into
    // the caller's frame.
    static void RaiseOrQueue(std::function<void()> raise);
    // VmInit: live from now on; the queued events are delivered in order.
    static void GoLive();

private:
    static inline MonoProfilerHandle handle_ = nullptr;
    static inline core::Core *core_ = nullptr;
    static inline std::atomic<Phase> phase_{Phase::kStarting};
    static inline std::atomic<bool> runtimeReady_{false};
    static inline std::recursive_mutex queueMutex_;
    static inline std::vector<std::function<void()>> queue_;
};

}  // namespace martini::mono
