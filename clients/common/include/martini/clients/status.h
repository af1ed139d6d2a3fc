// The run status handshake, client side: when $MARTINI_STATUS_FILE names a file (set
// by `martini run`), each line appended there tells the launcher what happened in the
// profiled process. Clients append one line per output file:
//   wrote PATH
//   failed PATH: CAUSE
// (the core appends "loaded N of M clients" and "client NAME failed: CAUSE",
// martini/core/status.h). One write(2) per line on an O_APPEND descriptor, so lines of
// several threads or processes never interleave. Header-only, no dependencies.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace martini::clients {

inline constexpr const char *kStatusFileVariable = "MARTINI_STATUS_FILE";

// Appends `line` (a newline is added) to $MARTINI_STATUS_FILE; nothing when it is not
// set. Returns false when it is set but cannot be written.
inline bool AppendStatusLine(std::string line) {
    const char *path = std::getenv(kStatusFileVariable);
    if (path == nullptr || *path == '\0') return true;
    for (char &c : line) {
        if (c == '\n') c = ' ';
    }
    line += '\n';
    const int fd = ::open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    return ok;
}

}  // namespace martini::clients
