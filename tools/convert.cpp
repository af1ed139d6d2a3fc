// martini convert: converts a JSON profile to collapsed stacks, a Chrome trace, pprof,
// an HTML report or JSON again.
//
//   martini convert PROFILE.json --to collapsed|chrome|pprof|html|json [-o FILE]
//   martini convert PROFILE.json --to collapsed --per-thread [-o FILE]
//
// The output is written complete or not at all (under a temporary name, then renamed).
// Exit status: 0 when it was written; 1 on any error.
#include "martini/clients/output_file.h"
#include "martini/report/profile.h"
#include "martini/report/views.h"
#include "cli.h"
#include "common.h"

#include <cstdio>
#include <ostream>
#include <string>

namespace report = martini::report;

namespace martini::tools {
namespace {

const char kConvertUsage[] =
    "usage: martini convert PROFILE.json --to FORMAT [-o FILE]\n"
    "       martini convert PROFILE.json --to collapsed --per-thread [-o FILE]";
const char kConvertDescription[] =
    "FORMAT: collapsed (flamegraph.pl, inferno, speedscope), chrome (Perfetto UI),\n"
    "pprof (go tool pprof), html (self-contained flame graph report), json.\n"
    "Without -o the output goes next to the profile: NAME.collapsed, NAME.trace.json,\n"
    "NAME.pb.gz, NAME.html. --per-thread: collapsed stacks of each thread's own tree,\n"
    "the thread's name as each line's first frame.";

}  // namespace

int Convert(int argc, char **argv) {
    std::string file, to, out;
    bool perThread = false;
    CLI::App app(kConvertDescription, "martini convert");
    Configure(app, kConvertUsage);
    app.add_option("profile", file, "a profile in Martini's JSON format")->type_name("PROFILE.json")->required();
    app.add_option("--to", to, "collapsed, chrome, pprof, html or json")->type_name("FORMAT")->required();
    app.add_option("-o,--output", out, "the file to write (default: next to the profile)")->type_name("FILE");
    app.add_flag("--per-thread", perThread, "collapsed stacks per thread, the thread as the root frame");
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    report::Format format;
    if (to == "collapsed") format = report::kCollapsed;
    else if (to == "chrome") format = report::kChrome;
    else if (to == "pprof") format = report::kPprof;
    else if (to == "html") format = report::kHtml;
    else if (to == "json") format = report::kJson;
    else return Fail("convert: unknown format '" + to + "' (collapsed, chrome, pprof, html or json)");
    if (perThread && format != report::kCollapsed) return Fail("convert: --per-thread is for --to collapsed only");
    report::Profile p;
    if (std::string e = report::ReadJsonFile(file, p); !e.empty()) return Fail("convert: " + e);
    if (out.empty()) {
        std::string base = file;
        if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0) base.resize(base.size() - 5);
        out = report::FileName(base, format);
        if (out == file) return Fail("convert: the output would overwrite the input; give -o FILE");
    }
    // Complete or absent: written under a temporary name, then renamed.
    std::string e, note;
    if (format == report::kPprof) {
        e = clients::WriteFileAtomicallyTo(out, [&](const std::string &tmp) { return report::WritePprof(p, tmp); });
    } else {
        e = clients::WriteFileAtomically(out, [&](std::ostream &o) {
            switch (format) {
                case report::kCollapsed:
                    note = (perThread ? report::WriteCollapsedPerThread(p, o, p.defaultMetric)
                                      : report::WriteCollapsed(p, o, p.defaultMetric))
                               .Note();
                    break;
                case report::kChrome: report::WriteChromeTrace(p, o); break;
                case report::kHtml: note = report::WriteHtml(p, o, report::HtmlOptions{}).Note(); break;
                default: report::WriteJson(p, o); break;
            }
        });
    }
    if (!e.empty()) return Fail("convert: " + e);
    std::fprintf(stderr, "martini: wrote %s\n", out.c_str());
    if (!note.empty()) std::fprintf(stderr, "martini: %s\n", note.c_str());
    return 0;
}

}  // namespace martini::tools
