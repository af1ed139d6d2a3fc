#include "run_status.h"

#include "martini/core/status.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace martini::tools {

RunStatus ReadRunStatus(const std::string &path) {
    RunStatus st;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        st.started = true;
        unsigned n = 0, m = 0;
        if (std::sscanf(line.c_str(), "loaded %u of %u clients", &n, &m) == 2) {
            st.loadedKnown = true;
            st.loaded += n;  // a program that starts the runtime twice (forks) adds up
            st.requested += m;
        } else if (line.rfind("client ", 0) == 0 || line.rfind("error: ", 0) == 0) {
            st.clientFailures.push_back(line);
        } else if (line.rfind("wrote ", 0) == 0) {
            st.wrote.push_back(line.substr(6));
        } else if (line.rfind("failed ", 0) == 0) {
            const std::string rest = line.substr(7);
            // PATH: CAUSE; a path may hold ": " itself, a cause rarely starts with '/'
            const auto colon = rest.rfind(": ");
            st.failed.emplace_back(colon == std::string::npos ? rest : rest.substr(0, colon),
                                   colon == std::string::npos ? "" : rest.substr(colon + 2));
        }
    }
    return st;
}

OwnStatusFile::OwnStatusFile() {
    if (const char *outer = std::getenv(core::kStatusFileVariable); outer != nullptr) {
        hadOuter_ = true;
        outer_ = outer;
    }
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
    pattern += "/martini-status-XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) return;
    ::close(fd);
    path_ = pattern;
    ::setenv(core::kStatusFileVariable, path_.c_str(), 1);
}

OwnStatusFile::~OwnStatusFile() {
    if (path_.empty()) return;
    if (hadOuter_) {
        ::setenv(core::kStatusFileVariable, outer_.c_str(), 1);
        std::ifstream in(path_);
        for (std::string line; std::getline(in, line);) core::AppendStatusLine(line);
    } else {
        ::unsetenv(core::kStatusFileVariable);
    }
    ::unlink(path_.c_str());
}

}  // namespace martini::tools
