// What profiler clients share about their outputs: the top/out/formats/name options,
// the output directory (from the options or MPI's EcSetOutputDirectory event), and
// writing the report library's files at the end. Header-only; links the report
// library (martini/report/profile.h).
#pragma once

#include <MpiAPI.h>

#include "martini/report/profile.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace martini::clients {

// A decimal count (digits only, at most 18 of them).
inline bool ParseCount(const std::string &text, std::uint64_t &out) {
    if (text.empty() || text.size() > 18) return false;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
    }
    out = std::strtoull(text.c_str(), nullptr, 10);
    return true;
}

struct OutputOptions {
    std::size_t top = 20;
    std::string outDir;
    unsigned formats = report::kAllFormats;
    std::string name;

    static constexpr const char *kUsage =
        "  top=N             rows of the table printed at exit (default 20, 0: none)\n"
        "  out=DIR           write the files there (also set by `martini run --output`)\n"
        "  formats=LIST      json+collapsed+chrome+pprof+html (default: all; none)\n";

    // Takes top=, out=, formats=, name=. Returns false when `key` is none of them;
    // else sets `error` when the value is bad.
    bool Parse(const std::string &key, const std::string &value, std::string &error) {
        if (key == "top") {
            std::uint64_t n = 0;
            if (!ParseCount(value, n)) error = "option 'top': '" + value + "' is not a count";
            else top = static_cast<std::size_t>(n);
        } else if (key == "out") {
            if (value.empty()) error = "option 'out' needs a directory";
            outDir = value;
        } else if (key == "formats") {
            if (std::string e = report::ParseFormats(value, formats); !e.empty()) error = "option 'formats': " + e;
        } else if (key == "name") {
            if (value.empty() || value.find('/') != std::string::npos) error = "option 'name': a base name, without '/'";
            else name = value;
        } else {
            return false;
        }
        return true;
    }
};

// The output directory: the option, else what EcSetOutputDirectory said.
class OutputDirectory {
public:
    void FromEvent(const char *dir) {
        std::lock_guard lock(mutex_);
        if (dir != nullptr) fromEvent_ = dir;
    }
    std::string Resolve(const OutputOptions &o) {
        std::lock_guard lock(mutex_);
        return o.outDir.empty() ? fromEvent_ : o.outDir;
    }

private:
    std::mutex mutex_;
    std::string fromEvent_;
};

class OutputDirObserver : public Martini::MPI::IEcSetOutputDirectoryEventObserver {
public:
    explicit OutputDirObserver(OutputDirectory &d) : d_(d) {}
    Martini::MPI::BitSet EventDataTypes() override { return Martini::MPI::DR_COMMAND; }
    void HandleEvent(Martini::MPI::SEcSetOutputDirectoryEventData &data) override {
        if (data.validData & Martini::MPI::DR_COMMAND) d_.FromEvent(data.szDirectoryName);
    }

private:
    OutputDirectory &d_;
};

// Writes the requested files when a directory is known; reports each on stderr.
inline void WriteOutputs(const report::Profile &p, const OutputOptions &o, const std::string &dir) {
    if (dir.empty() || o.formats == 0) return;
    std::vector<std::string> written, errors, notes;
    report::WriteFiles(p, dir, o.name, o.formats, written, errors, &notes);
    for (const auto &path : written) std::fprintf(stderr, "%s: wrote %s\n", p.tool.c_str(), path.c_str());
    for (const auto &e : errors) std::fprintf(stderr, "%s: %s\n", p.tool.c_str(), e.c_str());
    for (const auto &n : notes) std::fprintf(stderr, "%s: %s\n", p.tool.c_str(), n.c_str());
}

}  // namespace martini::clients
