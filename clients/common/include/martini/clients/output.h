// What profiler clients share about their outputs: the top/out/formats/name options,
// the output directory (from the options or MPI's EcSetOutputDirectory event), and
// writing the report library's files at the end. Header-only; links the report
// library (martini/report/profile.h).
#pragma once

#include <MpiAPI.h>

#include "martini/clients/expand.h"
#include "martini/clients/output_file.h"
#include "martini/report/profile.h"

#include <cstdint>
#include <filesystem>
#include <system_error>
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
        "  out=DIR           write the files there (also set by `martini run --output`);\n"
        "                    %p: the process id, %t: the start time (YYYYmmdd-HHMMSS)\n"
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
        return ExpandOutputName(o.outDir.empty() ? fromEvent_ : o.outDir);
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

// Writes the requested files when a directory is known, each complete or not at all
// (WriteFileAtomically); reports each on stderr and in the run status. Returns false
// when some file could not be written.
inline bool WriteOutputs(const report::Profile &p, const OutputOptions &o, const std::string &dir) {
    if (dir.empty() || o.formats == 0) return true;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        const std::string cause = "cannot create the output directory '" + dir + "': " + ec.message();
        std::fprintf(stderr, "%s: %s\n", p.tool.c_str(), cause.c_str());
        AppendStatusLine("failed " + detail::AbsolutePath(dir) + ": " + cause);
        return false;
    }
    const std::string prefix = dir.back() == '/' ? dir : dir + "/";
    bool ok = true;
    std::string note;  // what the collapsed stacks folded or cut, for the terminal
    for (report::Format f : {report::kJson, report::kCollapsed, report::kChrome, report::kPprof, report::kHtml}) {
        if (!(o.formats & f)) continue;
        const std::string path = prefix + report::FileName(ExpandOutputName(o.name), f);
        std::string error;
        if (f == report::kPprof) {
            error = WriteFileAtomicallyTo(path, [&](const std::string &tmp) { return report::WritePprof(p, tmp); });
        } else {
            error = WriteFileAtomically(path, [&](std::ostream &out) {
                switch (f) {
                    case report::kJson: report::WriteJson(p, out); break;
                    case report::kCollapsed: note = report::WriteCollapsed(p, out, p.defaultMetric).Note(); break;
                    case report::kChrome: report::WriteChromeTrace(p, out); break;
                    case report::kHtml: report::WriteHtml(p, out); break;
                    default: break;
                }
            });
        }
        if (error.empty()) {
            std::fprintf(stderr, "%s: wrote %s\n", p.tool.c_str(), path.c_str());
        } else {
            std::fprintf(stderr, "%s: %s; the partial file was removed\n", p.tool.c_str(), error.c_str());
            ok = false;
        }
    }
    if (!note.empty()) std::fprintf(stderr, "%s: %s\n", p.tool.c_str(), note.c_str());
    return ok;
}

}  // namespace martini::clients
