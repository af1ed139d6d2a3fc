// The timestamp clock providers fill DR_CPU_TIMESTAMP from: nanoseconds on the
// CLOCK_MONOTONIC time line, read from the CPU's invariant time-stamp counter when it
// has one (rdtsc: a few ns, against ~17 ns for clock_gettime on these machines),
// scaled by a factor calibrated against CLOCK_MONOTONIC once at start-up.
//
//   martini::core::Clock::Calibrate();            // once, before the first event
//   d.uiCpuTimestamp = martini::core::Clock::NowNs();
//
// Without an invariant TSC (constant_tsc and nonstop_tsc in /proc/cpuinfo), or on
// other CPUs, NowNs() is clock_gettime(CLOCK_MONOTONIC). Calibrate() may be called
// more than once (later calls are no-ops); NowNs() before it uses clock_gettime.
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace martini::core {

class Clock {
public:
    // Spins ~10 ms against CLOCK_MONOTONIC. Returns true when the TSC is used.
    static bool Calibrate() noexcept;

    static std::uint64_t MonotonicNs() noexcept {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return std::uint64_t(ts.tv_sec) * 1000000000u + std::uint64_t(ts.tv_nsec);
    }

    static std::uint64_t NowNs() noexcept {
#if defined(__x86_64__)
        if (__builtin_expect(state_.useTsc, 1)) {
            const std::uint64_t ticks = __rdtsc() - state_.baseTicks;
            __extension__ typedef unsigned __int128 Wide;
            return state_.baseNs + std::uint64_t(Wide(ticks) * state_.mult >> 32);
        }
#endif
        return MonotonicNs();
    }

    static bool UsesTsc() noexcept { return state_.useTsc; }
    // Ticks per microsecond found by Calibrate() (0 when the TSC is not used).
    static double TicksPerMicrosecond() noexcept;

private:
    struct State {
        bool useTsc = false;
        std::uint64_t baseTicks = 0;
        std::uint64_t baseNs = 0;
        std::uint64_t mult = 0;  // ns per tick << 32
    };
    static State state_;
};

}  // namespace martini::core
