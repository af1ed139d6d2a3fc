// martini coverage: works on the coverage client's lcov tracefiles.
//
//   martini coverage merge -o OUT.info [--xml FILE] [--html FILE] [--sources DIR]... FILE...
//
// Adds up the tracefiles of many processes (a test suite that forks JVMs, each writing
// its own with `--output 'cov/%p'`) into one, and prints the per-file summary.
// Exit status: 0 when the merged file (and the pages asked for) were written; 1 on any
// error: bad usage, a file that cannot be read or is not a tracefile, files made from
// different sources (each named), an output that cannot be written.
#include "martini/clients/output_file.h"
#include "martini/coverage/tracefile.h"
#include "cli.h"
#include "common.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace cov = martini::coverage;

namespace martini::tools {
namespace {

const char kCoverageUsage[] =
    "usage: martini coverage merge -o OUT.info [--xml FILE] [--html FILE] [--sources DIR]... FILE...";
const char kCoverageDescription[] =
    "Merges lcov tracefiles (the coverage client's coverage.info of several processes) into\n"
    "one: counts are added. Files made from different sources (a function starting on\n"
    "other lines) are refused, naming the file.";

int Write(const std::string &path, const std::function<void(std::ostream &)> &fill) {
    if (const std::string e = clients::WriteFileAtomically(path, fill); !e.empty()) return Fail("coverage: " + e);
    std::fprintf(stderr, "martini: wrote %s\n", path.c_str());
    return 0;
}

}  // namespace

int Coverage(int argc, char **argv) {
    std::string out, xml, html;
    std::vector<std::string> inputs, sources;
    CLI::App app(kCoverageDescription, "martini coverage");
    Configure(app, kCoverageUsage);
    app.require_subcommand(1);
    CLI::App *merge = app.add_subcommand("merge", "merge tracefiles of many processes into one");
    merge->add_option("-o,--output", out, "the merged tracefile")->type_name("OUT.info")->required();
    merge->add_option("--xml", xml, "also write Cobertura XML there")->type_name("FILE");
    merge->add_option("--html", html, "also write the HTML page there")->type_name("FILE");
    merge->add_option("--sources", sources, "where the HTML finds source files given by relative paths")
        ->type_name("DIR");
    merge->add_option("files", inputs, "the tracefiles to merge")->type_name("FILE")->required();
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;

    cov::Tracefile merged;
    for (const std::string &name : inputs) {
        std::ifstream in(name);
        if (!in) return Fail("coverage: cannot read '" + name + "': " + std::strerror(errno));
        cov::Tracefile one;
        if (std::string e = cov::ReadLcov(in, name, one); !e.empty()) return Fail("coverage: " + e);
        if (std::string e = cov::Merge(merged, one, name); !e.empty()) return Fail("coverage: " + e);
    }
    if (int rc = Write(out, [&](std::ostream &o) { cov::WriteLcov(merged, o); }); rc != 0) return rc;
    if (!xml.empty()) {
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch());
        if (int rc = Write(xml, [&](std::ostream &o) { cov::WriteCobertura(merged, o, now.count()); }); rc != 0) return rc;
    }
    if (!html.empty()) {
        auto read = [&](const std::string &path) -> std::optional<std::vector<std::string>> {
            if (auto lines = cov::ReadSourceFile(path)) return lines;
            for (const auto &dir : sources) {
                if (auto lines = cov::ReadSourceFile((std::filesystem::path(dir) / path).string())) return lines;
            }
            return std::nullopt;
        };
        if (int rc = Write(html, [&](std::ostream &o) { cov::WriteHtml(merged, o, read); }); rc != 0) return rc;
    }
    cov::WriteSummary(merged, std::cout, 20);
    return 0;
}

}  // namespace martini::tools
