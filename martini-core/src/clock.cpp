#include "martini/core/clock.h"

#include <atomic>
#include <fstream>
#include <string>

namespace martini::core {

Clock::State Clock::state_;

namespace {

bool InvariantTsc() {
#if defined(__x86_64__)
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("flags", 0) == 0) {
            auto has = [&](const char *flag) { return (" " + line + " ").find(std::string(" ") + flag + " ") != std::string::npos; };
            return has("constant_tsc") && has("nonstop_tsc");
        }
    }
#endif
    return false;
}

std::atomic<bool> gCalibrated{false};
double gTicksPerUs = 0;

}  // namespace

bool Clock::Calibrate() noexcept {
    if (gCalibrated.exchange(true)) return state_.useTsc;
#if defined(__x86_64__)
    try {
        if (!InvariantTsc()) return false;
    } catch (...) {
        return false;
    }
    // Two (ticks, ns) pairs ~10 ms apart; each pair read as tightly as possible (the
    // pair with the shortest clock_gettime around the rdtsc).
    auto pair = [](std::uint64_t &ticks, std::uint64_t &ns) {
        std::uint64_t best = ~0ull;
        for (int i = 0; i < 5; ++i) {
            const std::uint64_t t0 = __rdtsc();
            const std::uint64_t n = MonotonicNs();
            const std::uint64_t t1 = __rdtsc();
            if (t1 - t0 < best) {
                best = t1 - t0;
                ticks = t0 + (t1 - t0) / 2;
                ns = n;
            }
        }
    };
    std::uint64_t ticks0 = 0, ns0 = 0, ticks1 = 0, ns1 = 0;
    pair(ticks0, ns0);
    while (MonotonicNs() - ns0 < 10'000'000) {
    }
    pair(ticks1, ns1);
    if (ticks1 <= ticks0 || ns1 <= ns0) return false;
    const double nsPerTick = double(ns1 - ns0) / double(ticks1 - ticks0);
    gTicksPerUs = 1000.0 / nsPerTick;
    state_.mult = static_cast<std::uint64_t>(nsPerTick * 4294967296.0);
    state_.baseTicks = ticks1;
    state_.baseNs = ns1;
    state_.useTsc = true;
    return true;
#else
    return false;
#endif
}

double Clock::TicksPerMicrosecond() noexcept { return state_.useTsc ? gTicksPerUs : 0; }

}  // namespace martini::core
