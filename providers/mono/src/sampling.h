// Sampling: SampleHit from Mono's profiler signal. In CPU mode each thread sends it to
// itself at each 1/hz of its CPU time (SampleClock: a perf task-clock event, or a POSIX
// CPU timer); in wall mode, and where SampleClock cannot find the signal, Mono's sampler
// thread signals every attached thread at the rate. Mono's handler calls sample_hit on
// the signalled thread; there the sampled thread's managed stack is walked with Mono's
// async-signal-safe walker into martini-core's sample ring (core::SampleRing, a
// lock-free bounded queue: atomics only, no lock, no allocation, no runtime call other
// than the walk). A provider thread (not attached to
// the runtime: it makes no runtime call) takes the samples out, finds their methods in
// the provider's tables (every method is registered when Mono compiles or loads its
// code) and raises SampleHit: clients' handlers never run in a signal handler, and SampleHit
// comes on that thread, not the sampled one (DR_THREAD_ID names the sampled one).
//
// Samples of threads in native code without managed frames (blocked, idle) are dropped.
// A full queue drops samples (counted, reported at shutdown). In CPU mode the handler also
// reads the thread's CPU clock: the periods that passed without a signal (the timers and
// Mono's sampler wake at the kernel's tick) are counted, never raised as samples, and a
// warning names the rate asked for and the rate got when more than 5% were missed.
#pragma once

#include "threads.h"
#include "vm.h"

#include "martini/core/sample_ring.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace martini::mono {

class Sampling {
public:
    // Init: sampling must be enabled in the init function or never.
    static void Decide(MonoProfilerHandle h);
    static void SetCallbacks(MonoProfilerHandle h);
    static bool Wanted() { return wanted_; }
    // jit_done, on a runtime thread, with --debug: the compiled method's native offsets
    // and their source lines, so that the delivery thread (which may not call into the
    // runtime) gives each sampled frame its line.
    static void NoteLines(MonoMethod *method);
    // IMpi::SetSamplingRate through the core: SC_CPU is each thread's CPU clock
    // (SampleClock; Mono's PROCESS mode where that cannot run), SC_WALL Mono's REAL mode
    // (every thread, running or not). Called from MPICL_Instantiate it sets what Decide
    // and Start begin with; later it switches the running sampler at once.
    static TResult SetRate(unsigned hz, bool wall);
    // VmInit: the delivery thread starts; in CPU mode the threads' clocks replace Mono's
    // sampler.
    static void Start();
    // VmShutdown: the sampler stops and what is queued is delivered (on this thread); a
    // summary, and the warning when the rate was not met.
    static void Stop();
    // Mono's thread_started and thread_stopped, on the thread itself (Threads). From
    // ThreadStarted on, the thread's samples are taken, also before its ThreadStart
    // (which waits for its name or its first other event).
    static void ThreadStarted(ThreadContext &ctx);
    static void ThreadEnded();

private:
    static constexpr unsigned kMaxFrames = 64;
    static constexpr std::size_t kSlots = 4096;  // power of two
    struct Sample {
        TId threadId;
        std::uint64_t timestamp;
        std::uint32_t frames;
        MonoMethod *methods[kMaxFrames];
        std::int32_t nativeOffsets[kMaxFrames];
    };
    static void OnSampleHit(MonoProfiler *, const mono_byte *ip, const void *context);
    static mono_bool WalkFrame(MonoMethod *m, MonoDomain *, void *, int offset, void *data);
    static bool Queued();
    static void Deliver(const Sample &s);
    // The line of a native offset in `m`'s code (0 when unknown). Caller holds linesMutex_.
    static unsigned LineOf(MonoMethod *m, std::int32_t nativeOffset);
    static inline std::mutex linesMutex_;  // lines_
    // Per compiled method: (native offset, line), by offset.
    static inline std::unordered_map<MonoMethod *, std::vector<std::pair<std::uint32_t, std::uint32_t>>> lines_;
    static void DrainAll();
    static void Loop();
    static void SwitchClock();
    static bool CountPeriods(ThreadContext &ctx);
    static void PrintSummary();

    static inline bool wanted_ = false;
    // Filled in the signal handler, emptied by one consumer at a time (gDrainMutex).
    static inline core::SampleRing<Sample, kSlots> ring_;
    static inline std::atomic<bool> stop_{false};
    static inline std::atomic<std::uint64_t> dropped_{0}, delivered_{0}, unknownFrames_{0};
    // CPU mode: signals taken on the module's threads, periods that passed without one.
    static inline std::atomic<std::uint64_t> signals_{0}, missed_{0};
    static inline std::atomic<bool> wall_{false};
    static inline std::atomic<bool> monoClock_{false};  // CPU mode on Mono's sampler (SampleClock could not run)
    // Changed at every switch of clock or rate: a thread's CPU time read before is not
    // compared with one read after (ThreadContext::sampledEpoch).
    static inline std::atomic<std::uint32_t> epoch_{1};
    static inline std::atomic<std::uint64_t> periodNs_{1'000'000};  // of the rate now
};

}  // namespace martini::mono
