// martini report: prints the top-N table of a JSON profile, or its hot lines.
//
//   martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME] [--lines]
//                               [--from TIME] [--to TIME]
//
// Exit status: 0 when the table was printed; 1 on any error (bad usage, a profile that
// cannot be read, no such thread or metric in it).
#include "martini/report/profile.h"
#include "cli.h"
#include "common.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace report = martini::report;

namespace martini::tools {
namespace {

const char kReportUsage[] =
    "usage: martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME] [--lines] [--from TIME] [--to TIME]";
const char kReportDescription[] =
    "Prints the top-N methods of a profile (all threads merged, or one thread) by self\n"
    "value of the metric (default: wall time when measured, else the profile's own);\n"
    "with --lines, the hot lines of a sampled profile instead. --from and --to keep what\n"
    "a sampled profile's timeline holds between two times after its first sample\n"
    "(2s, 1500ms, 0.5; seconds without a unit).";

// The window's bound in nanoseconds: the option's value (seconds, or with a unit) or `otherwise`.
std::uint64_t WindowNs(const CLI::Option *option, double seconds, std::uint64_t otherwise) {
    return option->count() == 0 ? otherwise : static_cast<std::uint64_t>(seconds * 1e9);
}

}  // namespace

int Report(int argc, char **argv) {
    std::string file, thread, metric;
    std::size_t top = 20;
    bool lines = false;
    double from = 0, to = 0;
    CLI::App app(kReportDescription, "martini report");
    Configure(app, kReportUsage);
    app.add_option("profile", file, "a profile in Martini's JSON format")->type_name("PROFILE.json")->required();
    app.add_option("--top", top, "rows (default 20)")->type_name("N");
    app.add_option("--thread", thread, "one thread, by id or name (default: all merged)")->type_name("ID|NAME");
    app.add_option("--metric", metric, "rank by this metric (wall, cpu, calls, ...)")->type_name("NAME");
    app.add_flag("--lines", lines, "the hot lines (sampled profiles: the line each sample's innermost frame was at)");
    const std::map<std::string, double> units{{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"min", 60}};
    auto *fromOption = app.add_option("--from", from, "keep the samples from this time after the first")
                           ->type_name("TIME")
                           ->transform(CLI::AsNumberWithUnit(units))
                           ->check(CLI::NonNegativeNumber);
    auto *toOption = app.add_option("--to", to, "keep the samples up to this time after the first")
                         ->type_name("TIME")
                         ->transform(CLI::AsNumberWithUnit(units))
                         ->check(CLI::NonNegativeNumber);
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    report::Profile p;
    if (std::string e = report::ReadJsonFile(file, p); !e.empty()) return Fail("report: " + e);
    if (fromOption->count() != 0 || toOption->count() != 0) {
        const std::uint64_t fromNs = WindowNs(fromOption, from, 0), toNs = WindowNs(toOption, to, ~std::uint64_t{0});
        if (std::string e = report::KeepTimeWindow(p, fromNs, toNs); !e.empty()) return Fail("report: " + file + ": " + e);
    }
    if (!thread.empty()) {
        auto it = std::find_if(p.threads.begin(), p.threads.end(), [&](const report::Tree &t) {
            return t.threadName == thread || std::to_string(t.threadId) == thread;
        });
        if (it == p.threads.end()) {
            std::vector<std::string> known;
            for (const auto &t : p.threads) known.push_back(std::to_string(t.threadId) + " (" + t.threadName + ")");
            return Fail("report: no thread '" + thread + "' in the profile; it has " + Join(known, ", "));
        }
        report::Tree one = *it;
        p.threads = {one};
        p.merged = one;
    }
    int rankBy = -1;
    if (!metric.empty()) {
        const int index = p.MetricIndex(metric);
        if (index < 0) {
            std::vector<std::string> known;
            for (const auto &m : p.metrics) known.push_back(m.name);
            return Fail("report: no metric '" + metric + "' in the profile; it has " + Join(known, ", "));
        }
        rankBy = index;
    }
    if (lines) report::WriteHotLines(p, std::cout, top, rankBy);
    else report::WriteTopTable(p, std::cout, top, rankBy);
    return 0;
}

}  // namespace martini::tools
