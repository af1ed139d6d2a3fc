#include "intervals.h"

#include "attach.h"
#include "common.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <vector>

namespace martini::tools {

long long ParseDurationMs(const std::string &text) {
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (...) {
        return -1;
    }
    const std::string unit = text.substr(used);
    double scale = 0;
    if (unit.empty() || unit == "s") scale = 1000;
    else if (unit == "ms") scale = 1;
    else if (unit == "m" || unit == "min") scale = 60000;
    else if (unit == "h") scale = 3600000;
    if (scale == 0 || !(value > 0) || value * scale > 1e12) return -1;
    return static_cast<long long>(value * scale);
}

IntervalPoints::IntervalPoints(long pid, long long periodMs) : pid_(pid), periodMs_(periodMs) {
    // The signals martini passes on to the program stay with martini's main thread.
    sigset_t block, old;
    sigemptyset(&block);
    for (int sig : kForwardedSignals) sigaddset(&block, sig);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    thread_ = std::thread([this] { Loop(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

IntervalPoints::~IntervalPoints() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void IntervalPoints::Loop() {
    for (long n = 1;; ++n) {
        {
            std::unique_lock lock(mutex_);
            if (wake_.wait_for(lock, std::chrono::milliseconds(periodMs_), [this] { return stop_; })) return;
        }
        std::string reply;
        const std::string label = std::to_string(n);
        if (std::string e = SendControl(pid_, {"interval", label}, reply); !e.empty()) {
            std::fprintf(stderr, "martini: interval %s not written: %s\n", label.c_str(), e.c_str());
            continue;
        }
        const std::string last = PrintNotes(pid_, reply);
        if (last.rfind("ok ", 0) != 0) {
            std::fprintf(stderr, "martini: interval %s not written: %s\n", label.c_str(),
                         last.size() > 7 ? last.substr(7).c_str() : last.c_str());
        }
    }
}

}  // namespace martini::tools
