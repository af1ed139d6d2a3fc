#include "sampling.h"

#include "metadata.h"
#include "threads.h"

#include <semaphore.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace martini::mono {

namespace {
sem_t gStop;  // wakes the delivery thread at VmShutdown
std::timed_mutex gDrainMutex;
unsigned gFrequency = 1000;
bool gWall = false;
bool gRateSet = false;     // a client chose the rate (IMpi::SetSamplingRate)
bool gSamplerOwned = false;  // Mono's sampler is this module's (Decide)

MonoProfilerSampleMode ModeFor(bool wall) {
    return wall ? MONO_PROFILER_SAMPLE_MODE_REAL : MONO_PROFILER_SAMPLE_MODE_PROCESS;
}
}  // namespace

TResult Sampling::SetRate(unsigned hz, bool wall) {
    if (hz == 0) return MRTE_ERROR_ILLEGAL_ARGUMENT;
    gFrequency = hz;
    gWall = wall;
    gRateSet = true;
    if (gSamplerOwned && !stop_.load(std::memory_order_acquire)) {
        mono_profiler_set_sample_mode(Vm::Handle(), ModeFor(wall), hz);
    }
    return MRTE_RESULT_OK;
}

void Sampling::Decide(MonoProfilerHandle h) {
    wanted_ = Vm::Wants(EV_SAMPLE_HIT);
    if (!wanted_) return;
    // MARTINI_MONO_SAMPLE_HZ: the rate when no client chose one.
    if (const char *hz = std::getenv("MARTINI_MONO_SAMPLE_HZ"); !gRateSet && hz != nullptr && *hz != '\0') {
        char *end = nullptr;
        const unsigned long v = std::strtoul(hz, &end, 10);
        if (*end != '\0' || v == 0 || v > 100000) {
            core::LogLine(std::string("MARTINI_MONO_SAMPLE_HZ=") + hz + " is not a frequency in Hz (1-100000); using 1000");
        } else {
            gFrequency = static_cast<unsigned>(v);
        }
    }
    if (!mono_profiler_enable_sampling(h)) {
        core::LogLine("Mono's sampler is owned by another profiler module; SampleHit will not be raised");
        wanted_ = false;
        return;
    }
    cells_ = new Cell[kSlots];
    for (std::size_t i = 0; i < kSlots; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
    sem_init(&gStop, 0, 0);
    // PROCESS (CPU time of the process: a thread that does not run is not sampled)
    // unless a client asked for wall-clock time.
    gSamplerOwned = true;
    mono_profiler_set_sample_mode(h, ModeFor(gWall), gFrequency);
}

void Sampling::SetCallbacks(MonoProfilerHandle h) {
    if (wanted_) mono_profiler_set_sample_hit_callback(h, OnSampleHit);
}

mono_bool Sampling::WalkFrame(MonoMethod *m, MonoDomain *, void *, int offset, void *data) {
    auto *s = static_cast<Sample *>(data);
    if (m == nullptr) return false;
    s->methods[s->frames] = m;
    s->nativeOffsets[s->frames] = offset;
    return ++s->frames == kMaxFrames;
}

void Sampling::OnSampleHit(MonoProfiler *, const mono_byte *, const void *context) {
    // Signal context: atomics, IE TLS, Mono's async-safe walk, sem_post. Nothing else.
    const ThreadContext *ctx = tContext;
    if (ctx == nullptr || ctx->hidden || ctx->ended || stop_.load(std::memory_order_relaxed)) return;
    std::size_t pos = enqueue_.load(std::memory_order_relaxed);
    Cell *cell;
    for (;;) {
        cell = &cells_[pos & (kSlots - 1)];
        const std::size_t seq = cell->sequence.load(std::memory_order_acquire);
        const auto diff = static_cast<std::intptr_t>(seq) - static_cast<std::intptr_t>(pos);
        if (diff == 0) {
            if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
        } else if (diff < 0) {
            dropped_.fetch_add(1, std::memory_order_relaxed);  // full
            return;
        } else {
            pos = enqueue_.load(std::memory_order_relaxed);
        }
    }
    Sample &s = cell->sample;
    s.threadId = ctx->id;
    s.timestamp = core::Clock::NowNs();
    s.frames = 0;
    mono_stack_walk_async_safe(WalkFrame, const_cast<void *>(context), &s);
    cell->sequence.store(pos + 1, std::memory_order_release);
}

bool Sampling::Queued() {
    std::lock_guard lock(gDrainMutex);
    const Cell &cell = cells_[dequeue_ & (kSlots - 1)];
    return static_cast<std::intptr_t>(cell.sequence.load(std::memory_order_acquire)) -
               static_cast<std::intptr_t>(dequeue_ + 1) >= 0;
}

bool Sampling::Pop(Sample &out) {
    Cell &cell = cells_[dequeue_ & (kSlots - 1)];
    const std::size_t seq = cell.sequence.load(std::memory_order_acquire);
    if (static_cast<std::intptr_t>(seq) - static_cast<std::intptr_t>(dequeue_ + 1) < 0) return false;
    out = cell.sample;
    cell.sequence.store(dequeue_ + kSlots, std::memory_order_release);
    ++dequeue_;
    return true;
}

void Sampling::Deliver(const Sample &s) {
    if (s.frames == 0) return;  // in native code with no managed frame (blocked, idle)
    const BitSet wanted = Vm::Core().RequestedData(EV_SAMPLE_HIT);
    std::vector<SStackEntry> stack;
    if (wanted & DR_VM_CALL_STACK) {
        // Methods as registered at JIT time (jit_done); frames of a method never seen
        // there are left out (counted). No code offsets: mapping a native offset to IL
        // takes runtime calls, which this thread may not make.
        stack.reserve(s.frames);
        for (std::uint32_t i = 0; i < s.frames; ++i) {
            const MethodInfo *info = Metadata::Known(s.methods[i]);
            if (info == nullptr) {
                unknownFrames_.fetch_add(1, std::memory_order_relaxed);
                continue;
            }
            if (info->wrapper) continue;
            stack.push_back(SStackEntry{info->id, ~0u, 0});
        }
        if (stack.empty()) return;
    }
    SSampleHitEventData d;
    d.threadId = s.threadId;
    d.validData = DR_THREAD_ID;
    core::Put(d, wanted, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, s.timestamp);
    if (wanted & DR_VM_CALL_STACK) {
        d.stackTrace.entries = stack.data();
        d.stackTrace.uiSize = d.stackTrace.uiActualSize = static_cast<unsigned>(stack.size());
        d.validData |= DR_VM_CALL_STACK;
    }
    Vm::Core().Raise<ISampleHitEventObserver>(d);
    delivered_.fetch_add(1, std::memory_order_relaxed);
}

void Sampling::DrainAll() {
    // Bounded wait: at Environment.Exit Mono may have suspended the delivery thread
    // while it held the lock; its samples are then lost (counted below as not delivered).
    std::unique_lock lock(gDrainMutex, std::chrono::seconds(1));
    if (!lock.owns_lock()) return;
    auto sample = std::make_unique<Sample>();
    while (Pop(*sample)) Deliver(*sample);
}

void Sampling::Loop() {
    // Every 20 ms, when samples are queued. Not attached to the runtime (Mono waits at
    // exit for attached threads and suspends them for every collection): it makes no
    // runtime call, the methods were made known when Mono compiled or loaded them.
    // The sampled threads never wait for this one.
    while (!stop_.load(std::memory_order_acquire)) {
        timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 20 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_nsec -= 1000000000;
            ++until.tv_sec;
        }
        while (sem_timedwait(&gStop, &until) != 0 && errno == EINTR) {
        }
        if (stop_.load(std::memory_order_acquire)) break;
        if (Queued()) DrainAll();
    }
}

void Sampling::Start() {
    if (!wanted_) return;
    std::thread(Loop).detach();
}

void Sampling::Stop() {
    if (!wanted_) return;
    mono_profiler_set_sample_mode(Vm::Handle(), MONO_PROFILER_SAMPLE_MODE_NONE, 0);
    stop_.store(true, std::memory_order_release);
    sem_post(&gStop);
    DrainAll();  // here, on the shutting-down thread: the delivery thread may be suspended
    if (dropped_.load() != 0) {
        core::LogF("%llu samples were dropped (the sample queue was full)",
                   static_cast<unsigned long long>(dropped_.load()));
    }
}

}  // namespace martini::mono
