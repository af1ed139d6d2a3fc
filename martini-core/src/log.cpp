#include "martini/core/log.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace martini::core {

namespace {

constexpr std::string_view kPrefix = "martini: ";

// One write(2) per line: stdio's buffer would be shared with the program's own output
// and lines from two threads could interleave. A line longer than the buffer is cut.
void WriteLine(std::string_view message) noexcept {
    char line[4096];
    std::size_t n = 0;
    auto append = [&](std::string_view part) {
        const std::size_t take = std::min(part.size(), sizeof line - 1 - n);
        std::memcpy(line + n, part.data(), take);
        n += take;
    };
    append(kPrefix);
    append(message);
    line[n++] = '\n';
    std::fflush(stderr);  // what the process already wrote there comes first
    for (std::size_t done = 0; done < n;) {
        const ssize_t w = ::write(STDERR_FILENO, line + done, n - done);
        if (w <= 0) break;
        done += static_cast<std::size_t>(w);
    }
}

}  // namespace

void LogLine(std::string_view message) noexcept { WriteLine(message); }

void LogF(const char *format, ...) noexcept {
    char message[4000];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof message, format, args);
    va_end(args);
    WriteLine(message);
}

}  // namespace martini::core
