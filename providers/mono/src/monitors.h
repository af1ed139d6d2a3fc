// Monitors: ContendedMonitorEnter (monitor_contention: the thread blocks on a lock
// another thread owns) and ContendedMonitorEntered (monitor_acquired after it); Mono
// does not tell the owner (DR_MONITOR_OWNER_THREAD_ID not given). A contention that
// ends without the lock (monitor_failed: timeout, interruption) raises no Entered.
//
// MonitorWait/MonitorWaited and ThreadInteraction have no Mono event: they come from
// the runtime's own wrappers of the internal calls behind Monitor.Wait, Monitor.Pulse,
// Monitor.PulseAll, Thread.Start, Thread.Join, Thread.Sleep and Thread.Interrupt,
// instrumented with call contexts (their arguments, `this` and result). Mono compiles
// these wrappers itself, AOT images or not. A thread interaction is asked about by the
// method that contains the call site: the caller on the shadow stack (an instrumented
// method; none when no call-graph client wants the caller: then every client with a
// thread-interaction observer gets it).
//
// Locks: mutex_ guards the wrapper table (written at JIT time, a handful of entries).
#pragma once

#include "threads.h"

#include <mutex>

namespace martini::mono {

class Monitors {
public:
    // Init: call contexts must be switched on in the init function or never.
    static void Decide();
    static void SetCallbacks(MonoProfilerHandle h);

    // The call-instrumentation flags a runtime wrapper needs beyond the call graph's
    // (0 for every other method), remembered for EnterWithContext.
    static int WrapperFlags(MonoMethod *m, const std::string &className, const std::string &name);
    // The same for a method already seen (0: not one of the wrappers).
    static int FlagsOf(MonoMethod *m);
    static bool ContextsWanted() { return waitWanted_ || interactionsWanted_; }
    // A method instrumented with a context (one of the wrappers): its enter and leave.
    static void EnterWithContext(ThreadContext &ctx, MonoMethod *m, MonoProfilerCallContext *context);
    static void LeaveWithContext(ThreadContext &ctx, MonoMethod *m, MonoProfilerCallContext *context);

private:
    enum class Kind { kNone, kWait, kPulse, kPulseAll, kStart, kJoin, kSleep, kInterrupt };
    static Kind KindOf(MonoMethod *m);
    static void OnContention(MonoProfiler *, MonoObject *object);
    static void OnAcquired(MonoProfiler *, MonoObject *object);
    static void RaiseInteraction(ThreadContext &ctx, Kind kind, MonoObject *object);

    static inline bool waitWanted_ = false, interactionsWanted_ = false;
    struct Wrapper {
        MonoMethod *method;
        Kind kind;
    };
    static inline std::mutex mutex_;
    static inline Wrapper wrappers_[16] = {};
    static inline unsigned wrapperCount_ = 0;
};

}  // namespace martini::mono
