// The timestamp clock: on CLOCK_MONOTONIC's time line, never going backwards.
#include "martini/core/clock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <thread>

using martini::core::Clock;

TEST(Clock, StaysOnTheMonotonicTimeLineAfterCalibration) {
    Clock::Calibrate();
    Clock::Calibrate();  // a second call changes nothing
    // Compare with clock_gettime over a few milliseconds: within 100 us (rounding and
    // the time between the two reads; a descheduled read is retried).
    for (int i = 0; i < 5; ++i) {
        std::int64_t best = INT64_MAX;
        for (int tries = 0; tries < 20; ++tries) {
            const std::uint64_t before = Clock::MonotonicNs();
            const std::uint64_t now = Clock::NowNs();
            const std::uint64_t after = Clock::MonotonicNs();
            const std::int64_t mid = std::int64_t(before + (after - before) / 2);
            best = std::min(best, std::abs(std::int64_t(now) - mid));
        }
        EXPECT_LT(best, 100'000) << "TSC clock drifted from CLOCK_MONOTONIC (uses TSC: " << Clock::UsesTsc() << ")";
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

TEST(Clock, NeverGoesBackwardsOnAThread) {
    Clock::Calibrate();
    std::uint64_t last = Clock::NowNs();
    for (int i = 0; i < 1'000'000; ++i) {
        const std::uint64_t now = Clock::NowNs();
        ASSERT_GE(now, last);
        last = now;
    }
}
