// The run status handshake, provider/core side (docs/configuration.md, "Run status").
// When $MARTINI_STATUS_FILE names a file (`martini run` creates one and sets it for the
// program it starts), LoadClients appends
//   loaded N of M clients
//   client NAME failed: CAUSE          (one per client that was not loaded)
//   error: CAUSE                       (the client configuration could not be read)
// and the bundled clients append "wrote PATH" or "failed PATH: CAUSE" per output file
// with this same function (martini/clients/status.h names it in martini::clients).
// No line at all tells the launcher that the provider never started. Each line is one
// write(2) on an O_APPEND descriptor, so lines from several threads or processes never
// interleave. Header-only, with no dependencies (clients include it without linking
// martini-core).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace martini::core {

inline constexpr const char *kStatusFileVariable = "MARTINI_STATUS_FILE";

// Appends `line` (newlines inside become spaces; one is added) to $MARTINI_STATUS_FILE;
// nothing when it is not set. Returns false when it is set but cannot be written.
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

}  // namespace martini::core
