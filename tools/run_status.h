// The run status handshake, launcher side. A launcher (`martini run`, `martini
// replay`) creates an empty status file and names it in $MARTINI_STATUS_FILE for the
// provider it starts. Inside it, the core's LoadClients appends "loaded N of M clients"
// and "client NAME failed: CAUSE" (martini/core/status.h), the bundled clients "wrote
// PATH" or "failed PATH: CAUSE" per output file (martini/clients/status.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace martini::tools {

struct RunStatus {
    bool started = false;  // some line at all: the provider ran LoadClients
    bool loadedKnown = false;
    unsigned loaded = 0, requested = 0;
    std::vector<std::string> clientFailures;  // "client NAME failed: CAUSE", "error: CAUSE"
    std::vector<std::string> wrote;           // absolute paths
    std::vector<std::pair<std::string, std::string>> failed;  // path, cause
};

RunStatus ReadRunStatus(const std::string &path);

// A status file of this process's own, named in $MARTINI_STATUS_FILE while it lives
// (for a launcher whose provider runs in the same process: `martini replay`). When the
// variable already named a file (a launcher around this one), the lines are appended
// to it too at the end, so that launcher still sees them.
class OwnStatusFile {
public:
    OwnStatusFile();
    ~OwnStatusFile();
    OwnStatusFile(const OwnStatusFile &) = delete;
    OwnStatusFile &operator=(const OwnStatusFile &) = delete;
    // "" when the file could not be made (the handshake is then off: no status).
    const std::string &path() const { return path_; }
    RunStatus Read() const { return path_.empty() ? RunStatus{} : ReadRunStatus(path_); }

private:
    std::string path_, outer_;
    bool hadOuter_ = false;
};

}  // namespace martini::tools
