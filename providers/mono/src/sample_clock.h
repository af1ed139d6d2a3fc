// SampleClock: CPU-time sampling at the rate asked for. Mono's sampler thread sleeps on
// the process's CPU clock (clock_nanosleep on CLOCK_PROCESS_CPUTIME_ID), which the
// kernel wakes only at its tick: at 1000 Hz a busy thread got 250 samples per second
// of its CPU (docs/mono-provider.md). So in CPU mode Mono's sampler thread is left idle
// (mode NONE) and each thread is made to send itself Mono's own profiler signal:
//
//   a perf task-clock event per thread (perf_event_open, the signal at each 1/hz of the
//   thread's CPU time, at any rate); where the kernel refuses perf events, or
//   MARTINI_SAMPLING_CLOCK=timer asks for it, a POSIX timer on the thread's CPU clock
//   (SIGEV_THREAD_ID), which fires at the kernel's tick.
//
// Mono's handler for that signal then does what it does for its sampler's signals
// (rejects threads it does not run, marks the thread as in an async context for its
// unwinder, saves its hazard pointers) and raises sample_hit. The module never walks a
// stack from a handler of its own: the flag the unwinder needs is not in Mono's API.
//
// Mono's profiler signal is found at VmInit by its handler: the real-time signal whose
// handler lies in Mono's code, installed with SA_SIGINFO | SA_RESTART and an empty mask
// (mini-posix.c's add_signal_handler); Mono's other real-time signals (thread abort,
// suspend) block every signal while they run. When there is not exactly one such
// signal, Find says why and the module keeps Mono's sampler.
//
// Locks: mutex_ guards threads_ (each thread's perf event or timer) and is never taken in
// a signal handler; the period is an atomic.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace martini::mono {

class SampleClock {
public:
    // VmInit, after Mono installed its handlers: Mono's profiler signal. "" when found,
    // else why the module cannot drive it.
    static std::string Find();
    // Arms every thread of the process (the threads Mono does not run reject the signal
    // in Mono's handler), then each thread Mono starts at its ThreadStarted. Idempotent.
    static void Start(unsigned hz);
    static void SetRate(unsigned hz);
    // Every thread disarmed. Idempotent. Waits at most a second for mutex_ (at
    // Environment.Exit Mono may have suspended a thread holding it): then the events stay
    // armed, and the signals they send are ignored.
    static void Stop();
    static bool Running() { return running_.load(std::memory_order_acquire); }
    // On the thread itself (Mono's thread_started, thread_stopped).
    static void ThreadStarted();
    static void ThreadEnded();

    // The clock in use, for the summary and the warning: "perf task-clock", or the
    // timers and why ("POSIX CPU timers, perf_event_open refused, ...").
    static std::string Describe();
    static bool UsesTimers();
    // Why the timers: "MARTINI_SAMPLING_CLOCK=timer", "perf_event_open refused, ...".
    static std::string WhyTimers();

private:
    struct Armed {
        int perfFd = -1;
        bool hasTimer = false;
        timer_t timer{};
    };
    static void ArmLocked(Armed &a, pid_t tid);
    static void DisarmLocked(Armed &a);

    static inline int signal_ = 0;
    static inline std::atomic<bool> running_{false};
    static inline std::atomic<std::int64_t> periodNs_{1'000'000};
    static inline std::timed_mutex mutex_;
    static inline std::unordered_map<pid_t, Armed> threads_;
};

}  // namespace martini::mono
