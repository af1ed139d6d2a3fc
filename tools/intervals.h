// Continuous profiling for `martini run --interval` and `martini attach --interval`:
// a thread that sends `interval N` (N = 1, 2, ...) through the process's control FIFO
// every period, so each client that keeps intervals writes `<name>-N.*` holding only
// what it collected since the previous one (docs/control.md).
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace martini::tools {

// "30s", "500ms", "2m", "1h", or seconds; -1 when not a time.
long long ParseDurationMs(const std::string &text);

class IntervalPoints {
public:
    // Starts the thread; the first point comes one period after.
    IntervalPoints(long pid, long long periodMs);
    // Stops the thread (a point being sent is waited for).
    ~IntervalPoints();
    IntervalPoints(const IntervalPoints &) = delete;
    IntervalPoints &operator=(const IntervalPoints &) = delete;

private:
    void Loop();

    const long pid_;
    const long long periodMs_;
    std::mutex mutex_;  // stop_
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace martini::tools
