// Output names with placeholders, as async-profiler's file= and Mono's output= take
// them: %p is the process id, %t the start time (YYYYmmdd-HHMMSS, local time), %% a
// '%'. Any other '%' is kept as written. Header-only, no dependencies (the tools use it
// too: `martini run --output DIR`).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <ctime>
#include <string>

namespace martini::clients {

// "20261123-164115" for `when` in local time.
inline std::string FormatStartTime(std::time_t when) {
    std::tm tm{};
    ::localtime_r(&when, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
    return buf;
}

inline std::string ExpandOutputName(const std::string &name, pid_t pid, std::time_t start) {
    std::string out;
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (name[i] == '%' && i + 1 < name.size()) {
            const char c = name[i + 1];
            if (c == 'p') {
                out += std::to_string(pid);
                ++i;
                continue;
            }
            if (c == 't') {
                out += FormatStartTime(start);
                ++i;
                continue;
            }
            if (c == '%') {
                out += '%';
                ++i;
                continue;
            }
        }
        out += name[i];
    }
    return out;
}

// The time this process's clients were first asked for it: %t is the same in every
// name one process expands.
inline std::time_t ProcessStartTime() {
    static const std::time_t start = std::time(nullptr);
    return start;
}

// For clients: %p and %t of this process.
inline std::string ExpandOutputName(const std::string &name) {
    return ExpandOutputName(name, ::getpid(), ProcessStartTime());
}

}  // namespace martini::clients
