// martini diff: compares two JSON profiles of the same program.
//
//   martini diff BASE.json NEW.json [--output DIR] [--top N] [--metric NAME]
//
// Prints the methods whose self value changed most (base, new, delta, ratio); with
// --output, also writes DIR/diff.html, a differential flame graph (docs/formats.md).
// Exit status: 0 when the table (and the page) were written; 1 on any error (bad
// usage, a profile that cannot be read, no metric both profiles have, a page that
// cannot be written).
#include "martini/clients/output_file.h"
#include "martini/report/profile.h"
#include "martini/report/views.h"
#include "cli.h"
#include "common.h"

#include <cstdio>
#include <iostream>
#include <string>

namespace report = martini::report;

namespace martini::tools {
namespace {

const char kDiffUsage[] = "usage: martini diff BASE.json NEW.json [--output DIR] [--top N] [--metric NAME]";
const char kDiffDescription[] =
    "Compares two profiles of the same program (all threads merged): prints the methods\n"
    "whose self value of the metric changed most (default: wall time when measured,\n"
    "else the new profile's own), and with --output writes DIR/diff.html, a flame graph\n"
    "of the new profile coloured by the change (red slower, blue faster).";

}  // namespace

int Diff(int argc, char **argv) {
    std::string baseFile, newFile, dir, metric;
    std::size_t top = 20;
    CLI::App app(kDiffDescription, "martini diff");
    Configure(app, kDiffUsage);
    app.add_option("base", baseFile, "the profile to compare against")->type_name("BASE.json")->required();
    app.add_option("new", newFile, "the profile compared")->type_name("NEW.json")->required();
    app.add_option("-o,--output", dir, "write DIR/diff.html")->type_name("DIR");
    app.add_option("--top", top, "rows (default 20)")->type_name("N");
    app.add_option("--metric", metric, "compare this metric (wall, cpu, calls, ...)")->type_name("NAME");
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    report::Profile base, now;
    if (std::string e = report::ReadJsonFile(baseFile, base); !e.empty()) return Fail("diff: " + e);
    if (std::string e = report::ReadJsonFile(newFile, now); !e.empty()) return Fail("diff: " + e);
    std::size_t baseMetric = 0, newMetric = 0;
    if (std::string e = report::DiffMetric(base, now, metric, baseMetric, newMetric); !e.empty()) {
        return Fail("diff: " + e);
    }
    report::WriteDiffTable(base, now, baseMetric, newMetric, std::cout, top);
    std::cout.flush();
    if (dir.empty()) return 0;
    if (std::string e = PrepareOutputDirectory(dir); !e.empty()) return Fail("diff: " + e);
    std::string path = dir;
    if (path.back() != '/') path.push_back('/');
    path.append("diff.html");
    std::string note;
    const std::string e = clients::WriteFileAtomically(path, [&](std::ostream &o) {
        note = report::WriteDiffHtml(base, now, baseMetric, newMetric, baseFile, newFile, o).Note();
    });
    if (!e.empty()) return Fail("diff: " + e);
    std::fprintf(stderr, "martini: wrote %s\n", path.c_str());
    if (!note.empty()) std::fprintf(stderr, "martini: %s\n", note.c_str());
    return 0;
}

}  // namespace martini::tools
