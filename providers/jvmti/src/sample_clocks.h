// The JVM sampler's clocks: what sends SIGPROF to the sampled threads.
//
//   CPU mode   a perf task-clock event per thread (perf_event_open: a signal at each
//              1/hz seconds of CPU the thread uses, at any rate); where the kernel
//              refuses perf events, or MARTINI_SAMPLING_CLOCK=timer asks for it, a
//              POSIX timer on the thread's CPU clock (timer_create, SIGEV_THREAD_ID),
//              which fires at the kernel's tick.
//   wall mode  the sampler thread signals every sampled thread (tgkill) each 1/hz
//              seconds (SignalAll), sleeping, waiting and blocked ones too.
//
// Where perf lets the events count kernel time, each also records the kernel's call
// chain into a ring mapped per thread, registered for the handler
// (core::KernelRings, kernel_stacks.h).
//
// Owns: the sampled OS threads and their clocks, whether they are armed (from Start to
// Stop), the rate and mode, the sampler thread's id (never sampled), perf's refusal,
// and the kernel rings taken out of use, unmapped at a rescan a second later.
// Locks: mutex_ guards threads_, armed_ and a change of rate or mode; it is never
// taken in the signal handler. The rate and mode are also atomics, read without it.
#pragma once

#include "vm.h"

#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace martini::jvm {

class SampleClocks {
public:
    // IMpi::SetSamplingRate (any thread, also a SampleHit handler): the rate and mode,
    // applied at once to the armed threads.
    static void SetRate(unsigned hz, bool wall);
    static unsigned Hz() { return hz_.load(std::memory_order_relaxed); }
    static bool Wall() { return wall_.load(std::memory_order_relaxed); }

    // Sampling::Start: every thread of the process armed, and later ones as they come.
    static void Start();
    // Sampling::Stop: every clock deleted, the threads forgotten.
    static void Stop();
    // On the thread itself (ThreadStart, ThreadEnd): armed when the clocks are.
    static void Add(pid_t tid);
    static void Drop(pid_t tid);
    // The sampler thread: itself never sampled; about once a second, threads started
    // since (the JVM's own, which have no ThreadStart) armed, ended ones dropped.
    static void Exclude(pid_t sampler);
    static void Rescan();
    // The sampler thread, wall mode: one signal to each sampled thread.
    static void SignalAll();
    // The sampler thread: threads whose samples showed no Java (and no native) frame,
    // disarmed and left alone.
    static void LeaveAlone(const std::vector<pid_t> &tids);
    static std::size_t Count();

    // CPU mode's clock: perf unless MARTINI_SAMPLING_CLOCK=timer asks for the timers.
    static bool PerfChosen();
    // errno of perf_event_open's first refusal (no further attempts), or 0.
    static int PerfRefused() { return perfRefused_.load(std::memory_order_relaxed); }

private:
    struct Thread {
        int perfFd = -1;  // the task-clock event; its overflows signal the thread
        void *ring = nullptr;  // its kernel call chains, when it records them
        timer_t timer{};
        bool hasTimer = false;
        bool notJava = false;  // its samples found no Java thread: left alone
    };
    // Caller holds mutex_.
    static void AddLocked(pid_t tid);
    static void ArmLocked(Thread &t, pid_t tid);
    static void DisarmLocked(Thread &t, pid_t tid);
    static void UnmapRetiredLocked();
    static void DropLocked(pid_t tid);

    static inline std::atomic<unsigned> hz_{Martini::MPI::kDefaultSamplingHz};
    static inline std::atomic<bool> wall_{false};
    static inline std::atomic<int> perfRefused_{0};
    static inline std::mutex mutex_;
    static inline bool armed_ = false;
    static inline pid_t sampler_ = 0;
    static inline std::unordered_map<pid_t, Thread> threads_;
    struct Retired {
        void *ring;
        std::chrono::steady_clock::time_point when;
    };
    static inline std::vector<Retired> retired_;
};

}  // namespace martini::jvm
