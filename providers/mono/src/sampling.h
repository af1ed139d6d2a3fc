// Sampling: SampleHit from Mono's statistical sampler. Mono signals each attached
// thread at the sampling frequency and calls sample_hit in that thread's signal
// handler; there the sampled thread's managed stack is walked with Mono's
// async-signal-safe walker into a lock-free bounded queue (atomics only: no lock, no
// allocation, no runtime call other than the walk). A provider thread (not attached to
// the runtime: it makes no runtime call) takes the samples out, finds their methods in
// the provider's tables (every method is registered when Mono compiles or loads its
// code) and raises SampleHit: clients' handlers never run in a signal handler, and SampleHit
// comes on that thread, not the sampled one (DR_THREAD_ID names the sampled one).
//
// Samples of threads in native code without managed frames (blocked, idle) are dropped.
// A full queue drops samples (counted, reported at shutdown).
#pragma once

#include "vm.h"

#include <atomic>
#include <cstdint>

namespace martini::mono {

class Sampling {
public:
    // Init: sampling must be enabled in the init function or never.
    static void Decide(MonoProfilerHandle h);
    static void SetCallbacks(MonoProfilerHandle h);
    static bool Wanted() { return wanted_; }
    // IMpi::SetSamplingRate through the core: SC_CPU is Mono's PROCESS mode (the
    // process's CPU clock), SC_WALL its REAL mode (every thread, running or not). Called
    // from MPICL_Instantiate it sets what Decide starts Mono's sampler with; later it
    // switches the running sampler at once.
    static TResult SetRate(unsigned hz, bool wall);
    // VmInit: the delivery thread starts.
    static void Start();
    // VmShutdown: the sampler stops and what is queued is delivered (on this thread).
    static void Stop();

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
    struct Cell {
        std::atomic<std::size_t> sequence;
        Sample sample;
    };
    static void OnSampleHit(MonoProfiler *, const mono_byte *ip, const void *context);
    static mono_bool WalkFrame(MonoMethod *m, MonoDomain *, void *, int offset, void *data);
    static bool Pop(Sample &out);
    static bool Queued();
    static void Deliver(const Sample &s);
    static void DrainAll();
    static void Loop();

    static inline bool wanted_ = false;
    static inline Cell *cells_ = nullptr;
    static inline std::atomic<std::size_t> enqueue_{0};
    static inline std::size_t dequeue_ = 0;  // the consumer's (one at a time, drainMutex_)
    static inline std::atomic<bool> stop_{false};
    static inline std::atomic<std::uint64_t> dropped_{0}, delivered_{0}, unknownFrames_{0};
};

}  // namespace martini::mono
