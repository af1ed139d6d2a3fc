#include "sampling.h"

#include "metadata.h"
#include "sample_clock.h"
#include "threads.h"

#include <semaphore.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

namespace martini::mono {

namespace {
// The calling thread's context from its thread_started on, for the signal handler: the
// thread's tContext is set only with its ThreadStart, at its name or first other event
// (a thread that only computes raises none). Initial-exec, as tContext (threads.h).
constinit thread_local ThreadContext *tSampled __attribute__((tls_model("initial-exec"))) = nullptr;

sem_t gStop;  // wakes the delivery thread at VmShutdown
std::timed_mutex gDrainMutex;
std::mutex gSwitchMutex;  // a change of clock or rate: SetRate, Start, Stop
unsigned gFrequency = 1000;
bool gRateSet = false;     // a client chose the rate (IMpi::SetSamplingRate)
bool gSamplerOwned = false;  // Mono's sampler is this module's (Decide)
bool gStarted = false;       // Start ran (VmInit)
// Why the threads' CPU clocks do not run in CPU mode ("" while they can): Mono's
// sampler takes their place.
std::string gNoClock;

// MARTINI_SAMPLING_CLOCK=mono: Mono's own sampler in CPU mode too (to compare).
bool MonoSamplerChosen() {
    const char *clock = std::getenv("MARTINI_SAMPLING_CLOCK");
    return clock != nullptr && std::strcmp(clock, "mono") == 0;
}
}  // namespace

TResult Sampling::SetRate(unsigned hz, bool wall) {
    if (hz == 0) return MRTE_ERROR_ILLEGAL_ARGUMENT;
    std::lock_guard lock(gSwitchMutex);
    gFrequency = hz;
    wall_.store(wall, std::memory_order_relaxed);
    gRateSet = true;
    if (gSamplerOwned && gStarted && !stop_.load(std::memory_order_acquire)) SwitchClock();
    return MRTE_RESULT_OK;
}

// Under gSwitchMutex, once started: the clock for the mode and rate now.
void Sampling::SwitchClock() {
    epoch_.fetch_add(1, std::memory_order_relaxed);
    periodNs_.store(1'000'000'000u / gFrequency, std::memory_order_relaxed);
    monoClock_.store(!gNoClock.empty(), std::memory_order_relaxed);
    if (!wall_.load(std::memory_order_relaxed) && gNoClock.empty()) {
        mono_profiler_set_sample_mode(Vm::Handle(), MONO_PROFILER_SAMPLE_MODE_NONE, gFrequency);
        if (SampleClock::Running()) SampleClock::SetRate(gFrequency);
        else SampleClock::Start(gFrequency);
        return;
    }
    SampleClock::Stop();
    mono_profiler_set_sample_mode(Vm::Handle(), wall_.load(std::memory_order_relaxed)
                                                    ? MONO_PROFILER_SAMPLE_MODE_REAL
                                                    : MONO_PROFILER_SAMPLE_MODE_PROCESS,
                                  gFrequency);
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
    if (!ring_.Map()) core::LogLine("sampling: cannot map the sample queue: samples will be dropped");
    sem_init(&gStop, 0, 0);
    // Until VmInit, Mono's sampler: PROCESS (CPU time of the process: a thread that
    // does not run is not sampled) unless a client asked for wall-clock time.
    gSamplerOwned = true;
    mono_profiler_set_sample_mode(h, wall_.load() ? MONO_PROFILER_SAMPLE_MODE_REAL : MONO_PROFILER_SAMPLE_MODE_PROCESS,
                                  gFrequency);
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

// In the signal handler, CPU mode: the periods of this thread's CPU time since its last
// signal, past the one this signal stands for, are counted as missed (a timer or Mono's
// sampler waking at the kernel's tick), never raised. Mono's sampler signals every
// thread, running or not: a signal to a thread that used less than half a period since
// its last one stands for no CPU time, and false says to drop it.
bool Sampling::CountPeriods(ThreadContext &ctx) {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);  // async-signal-safe
    const auto cpuNs = static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(now.tv_nsec);
    const std::uint32_t epoch = epoch_.load(std::memory_order_relaxed);
    const std::uint64_t periodNs = periodNs_.load(std::memory_order_relaxed);
    if (ctx.sampledEpoch != epoch || periodNs == 0) {  // the thread's first signal at this rate
        ctx.sampledCpuNs = cpuNs;
        ctx.sampledEpoch = epoch;
    } else {
        // sampledCpuNs: the CPU time the signals so far stood for (one period each, and
        // the periods missed), so that the periods are counted exactly over time.
        const std::uint64_t used = cpuNs > ctx.sampledCpuNs ? cpuNs - ctx.sampledCpuNs : 0;
        if (monoClock_.load(std::memory_order_relaxed) && used < periodNs / 2) return false;
        const std::uint64_t periods = used / periodNs > 1 ? used / periodNs : 1;
        if (periods > 1) missed_.fetch_add(periods - 1, std::memory_order_relaxed);
        ctx.sampledCpuNs += periods * periodNs;
    }
    signals_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

void Sampling::OnSampleHit(MonoProfiler *, const mono_byte *, const void *context) {
    // Signal context: atomics, IE TLS, the thread's CPU clock, Mono's async-safe walk.
    // Nothing else.
    ThreadContext *ctx = tContext != nullptr ? tContext : tSampled;
    if (ctx == nullptr || ctx->hidden || ctx->ended || stop_.load(std::memory_order_relaxed)) return;
    if (!wall_.load(std::memory_order_relaxed) && !CountPeriods(*ctx)) return;
    Sample *s = ring_.Claim();
    if (s == nullptr) {
        dropped_.fetch_add(1, std::memory_order_relaxed);  // full
        return;
    }
    s->threadId = ctx->id;
    s->timestamp = core::Clock::NowNs();
    s->frames = 0;
    mono_stack_walk_async_safe(WalkFrame, const_cast<void *>(context), s);
    ring_.Publish(s);
}

bool Sampling::Queued() {
    std::lock_guard lock(gDrainMutex);
    return ring_.Ready();
}

namespace {
// MonoDebugLineNumberEntry, which mono-debug.h declares without its fields: Mono's
// debug-internals.h has had these two since Mono 2 (the soft debugger reads them too).
struct LineNumberEntry {
    std::uint32_t ilOffset;
    std::uint32_t nativeOffset;
};
}  // namespace

void Sampling::NoteLines(MonoMethod *method) {
    if (!mono_debug_enabled()) return;
    MonoDomain *domain = mono_domain_get();
    MonoDebugMethodJitInfo *jit = domain != nullptr ? mono_debug_find_method(method, domain) : nullptr;
    if (jit == nullptr) return;
    std::vector<SLineNumberTableEntry> table;  // IL offset -> line
    std::string source;
    Metadata::Lines(*Metadata::Method(method), table, source, /*runtimeThread=*/true);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> byNative;
    for (std::uint32_t i = 0; i < jit->num_line_numbers; ++i) {
        const auto &e = reinterpret_cast<const LineNumberEntry *>(jit->line_numbers)[i];
        unsigned line = 0;
        for (const auto &t : table) {
            if (t.uiOffset > e.ilOffset) break;
            line = t.uiLineNumber;
        }
        if (line != 0) byNative.emplace_back(e.nativeOffset, line);
    }
    mono_debug_free_method_jit_info(jit);
    if (byNative.empty()) return;
    std::sort(byNative.begin(), byNative.end());
    std::lock_guard lock(linesMutex_);
    lines_[method] = std::move(byNative);
}

unsigned Sampling::LineOf(MonoMethod *m, std::int32_t nativeOffset) {
    if (nativeOffset < 0) return 0;
    const auto it = lines_.find(m);
    if (it == lines_.end()) return 0;
    const auto &v = it->second;
    auto at = std::upper_bound(v.begin(), v.end(), std::pair{static_cast<std::uint32_t>(nativeOffset), ~0u});
    return at == v.begin() ? 0 : std::prev(at)->second;
}

void Sampling::Deliver(const Sample &s) {
    if (s.frames == 0) return;  // in native code with no managed frame (blocked, idle)
    const BitSet wanted = Vm::Core().RequestedData(EV_SAMPLE_HIT);
    std::vector<SStackEntry> stack;
    if (wanted & DR_VM_CALL_STACK) {
        // Methods as registered at JIT time (jit_done); frames of a method never seen
        // there are left out (counted). Lines from the native offsets, through the
        // tables jit_done noted (NoteLines): mapping an offset takes runtime calls,
        // which this thread may not make.
        stack.reserve(s.frames);
        std::lock_guard lines(linesMutex_);  // once per sample, for LineOf
        for (std::uint32_t i = 0; i < s.frames; ++i) {
            const MethodInfo *info = Metadata::Known(s.methods[i]);
            if (info == nullptr) {
                unknownFrames_.fetch_add(1, std::memory_order_relaxed);
                continue;
            }
            if (info->wrapper) continue;
            // A caller's offset is its return address: the call is the instruction before.
            const std::int32_t offset = i == 0 ? s.nativeOffsets[i] : s.nativeOffsets[i] - 1;
            stack.push_back(SStackEntry{info->id, ~0u, LineOf(s.methods[i], offset)});
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
    while (ring_.Pop(*sample)) Deliver(*sample);
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
    std::lock_guard lock(gSwitchMutex);
    // Mono installed its handlers in mini_init, before runtime_initialized.
    gNoClock = MonoSamplerChosen() ? "MARTINI_SAMPLING_CLOCK=mono" : SampleClock::Find();
    gStarted = true;
    SwitchClock();
}

void Sampling::ThreadStarted(ThreadContext &ctx) {
    if (!wanted_) return;
    tSampled = &ctx;
    SampleClock::ThreadStarted();
}

void Sampling::ThreadEnded() {
    if (wanted_) SampleClock::ThreadEnded();
}

void Sampling::Stop() {
    if (!wanted_) return;
    {
        std::lock_guard lock(gSwitchMutex);
        SampleClock::Stop();
        mono_profiler_set_sample_mode(Vm::Handle(), MONO_PROFILER_SAMPLE_MODE_NONE, 0);
        stop_.store(true, std::memory_order_release);
    }
    sem_post(&gStop);
    DrainAll();  // here, on the shutting-down thread: the delivery thread may be suspended
    PrintSummary();
}

// With MARTINI_MONO_VERBOSE, one line: the samples, the clock, the signals and the
// periods missed. Always: a full queue, and when more than 5% of the periods were missed
// a warning with the rate asked for, the rate got and why.
void Sampling::PrintSummary() {
    unsigned hz = 0;
    std::string noClock;
    {
        std::lock_guard lock(gSwitchMutex);  // a client may still set the rate from a handler
        hz = gFrequency;
        noClock = gNoClock;
    }
    const bool wall = wall_.load();
    const std::uint64_t signals = signals_.load(), missed = missed_.load();
    const std::string clock = wall ? "Mono's sampler" : !noClock.empty() ? "Mono's sampler: " + noClock : SampleClock::Describe();
    std::string line = "sampling: " + std::to_string(delivered_.load()) + " samples raised at " + std::to_string(hz) +
                       (wall ? " Hz of wall-clock time (" : " Hz of CPU time (") + clock;
    if (!wall) line += ", " + std::to_string(signals) + " signals, " + std::to_string(missed) + " periods missed";
    line += ")";
    if (const char *v = std::getenv("MARTINI_MONO_VERBOSE"); v != nullptr && *v != '\0' && *v != '0') {
        core::LogLine(line);
    }
    if (const auto dropped = dropped_.load(); dropped != 0) {
        core::LogF("sampling: %llu samples were dropped (the sample queue was full)",
                   static_cast<unsigned long long>(dropped));
    }
    if (wall || missed == 0 || missed * 20 < signals + missed) return;
    const auto got = static_cast<unsigned>(static_cast<double>(hz) * static_cast<double>(signals) /
                                           static_cast<double>(signals + missed));
    std::string why, remedy = "A lower rate (sample=" + std::to_string(got) + ")";
    if (!noClock.empty()) {
        why = "Mono's sampler was used (" + noClock + "), whose thread wakes at the kernel's tick";
        remedy += " gives true rates";
    } else if (SampleClock::UsesTimers()) {
        why = "the POSIX CPU timers were used (" + SampleClock::WhyTimers() + "), which fire at the kernel's tick";
        remedy += " or perf events (perf_event_paranoid) give true rates";
    } else {
        why = "the perf task-clock signals came late (a machine with more busy threads than cores?)";
        remedy += " may give true rates";
    }
    core::LogF("sampling: warning: asked for %u Hz of CPU time, got about %u Hz: %s; %llu periods were missed and "
               "are not counted as samples (times from samples are that much low). %s",
               hz, got, why.c_str(), static_cast<unsigned long long>(missed), remedy.c_str());
}

}  // namespace martini::mono
