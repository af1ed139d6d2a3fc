// martini report: prints the top-N table of a JSON profile.
//
//   martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME]
//
// Exit status: 0 when the table was printed; 1 on any error (bad usage, a profile that
// cannot be read, no such thread or metric in it).
#include "martini/report/profile.h"
#include "cli.h"
#include "common.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

namespace report = martini::report;

namespace martini::tools {
namespace {

const char kReportUsage[] = "usage: martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME]";
const char kReportDescription[] =
    "Prints the top-N methods of a profile (all threads merged, or one thread) by self\n"
    "value of the metric (default: wall time when measured, else the profile's own).";

}  // namespace

int Report(int argc, char **argv) {
    std::string file, thread, metric;
    std::size_t top = 20;
    CLI::App app(kReportDescription, "martini report");
    Configure(app, kReportUsage);
    app.add_option("profile", file, "a profile in Martini's JSON format")->type_name("PROFILE.json")->required();
    app.add_option("--top", top, "rows (default 20)")->type_name("N");
    app.add_option("--thread", thread, "one thread, by id or name (default: all merged)")->type_name("ID|NAME");
    app.add_option("--metric", metric, "rank by this metric (wall, cpu, calls, ...)")->type_name("NAME");
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    report::Profile p;
    if (std::string e = report::ReadJsonFile(file, p); !e.empty()) return Fail("report: " + e);
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
    report::WriteTopTable(p, std::cout, top, rankBy);
    return 0;
}

}  // namespace martini::tools
