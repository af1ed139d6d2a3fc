#include "sampling.h"

#include "metadata.h"
#include "threads.h"

#include <semaphore.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace martini::mono {

namespace {
sem_t gReady;  // posted by the signal handler (sem_post is async-signal-safe)
std::timed_mutex gDrainMutex;
unsigned gFrequency = 1000;
}  // namespace

void Sampling::Decide(MonoProfilerHandle h) {
    wanted_ = Vm::Wants(EV_SAMPLE_HIT);
    if (!wanted_) return;
    if (const char *hz = std::getenv("MARTINI_MONO_SAMPLE_HZ"); hz != nullptr && *hz != '\0') {
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
    sem_init(&gReady, 0, 0);
    // CPU time of the process: a thread that does not run is not sampled.
    mono_profiler_set_sample_mode(h, MONO_PROFILER_SAMPLE_MODE_PROCESS, gFrequency);
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
    sem_post(&gReady);
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
        MonoDomain *domain = mono_get_root_domain();
        stack.reserve(s.frames);
        for (std::uint32_t i = 0; i < s.frames; ++i) {
            const MethodInfo *info = Metadata::Method(s.methods[i]);
            if (info->wrapper) continue;
            SStackEntry e{info->id, ~0u, 0};
            if (mono_debug_enabled() && s.nativeOffsets[i] >= 0) {
                if (MonoDebugSourceLocation *loc = mono_debug_lookup_source_location(
                        s.methods[i], static_cast<uint32_t>(s.nativeOffsets[i]), domain)) {
                    e.uiLocation = loc->il_offset;
                    e.uiLineNumber = loc->row;
                    mono_debug_free_source_location(loc);
                }
            }
            stack.push_back(e);
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
    // Not attached to the runtime: Mono waits at exit for every attached thread, and
    // what this thread calls (metadata names, debug info) needs no attachment.
    while (!stop_.load(std::memory_order_acquire)) {
        timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_nsec -= 1000000000;
            ++until.tv_sec;
        }
        sem_timedwait(&gReady, &until);
        if (stop_.load(std::memory_order_acquire)) break;
        DrainAll();
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
    sem_post(&gReady);
    DrainAll();  // here, on the shutting-down thread: the delivery thread may be suspended
    if (dropped_.load() != 0) {
        core::LogF("%llu samples were dropped (the sample queue was full)",
                   static_cast<unsigned long long>(dropped_.load()));
    }
}

}  // namespace martini::mono
