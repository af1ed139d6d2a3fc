// cgprof's options: see kUsage and docs/cgprof.md.
#include "options.h"

#include <MpiAPI.h>

#include "martini/clients/names.h"
#include "martini/clients/option_names.h"
#include "martini/clients/output.h"
#include "martini/report/profile.h"

namespace cgprof {

using namespace Martini::MPI;
namespace report = martini::report;

const char kUsage[] =
    "cgprof options (comma-separated):\n"
    "  counts | time     mode: calls only (cheapest), or calls and wall time (default)\n"
    "  cpu               also thread CPU time per call (where the runtime gives it)\n"
    "  include=PATTERN   profile only methods whose Class.method matches (* and ?); repeatable\n"
    "  exclude=PATTERN   leave out methods whose Class.method matches; repeatable\n"
    "  filter=RULES      a rule set instead: +PATTERN|-PATTERN|...  or  @rules.json (docs/filters.md)\n"
    "  top=N             rows of the table printed at exit (default 20, 0: none)\n"
    "  out=DIR           write the files there (also set by `martini run --output`)\n"
    "  formats=LIST      json+collapsed+chrome+pprof+html (default: json+html; all; none)\n"
    "  name=BASE         base name of the files (default: cgprof)\n"
    "  depth=N           deepest call path kept per thread (default 4096); deeper calls are counted as overflow\n"
    "  nodes=N           calling contexts kept per thread (default 500000); calls on further new paths are\n"
    "                    kept per method under \"(more call paths)\", so per-method figures stay exact\n"
    "  trace=N           time mode: the first N calls entered become Chrome trace slices (default 100000);\n"
    "                    sample mode: the first N samples keep their times, for the Chrome trace and\n"
    "                    `martini report --from/--to` (default 1000000)\n"
    "  paused            start paused: the call-graph group is enabled by an EcStart command\n"
    "  lines             call-site lines for pprof: a short stack walk per new calling context (on when\n"
    "                    pprof is among the formats)\n"
    "  sample[=HZ]       sample mode: trees from SampleHit stacks at HZ per second per thread (default 100,\n"
    "                    at most 10000), time estimated from the samples; nothing instrumented\n"
    "  wall              sample mode on wall-clock time (every thread, sleeping and blocked too), not CPU time\n";

// Every option's name (docs/configuration.md lists them): a name that is none of them
// is refused, with the nearest one.
constexpr const char *kOptionNames[] = {"counts", "time", "cpu", "include", "exclude", "filter", "top", "out",
                                        "formats", "name", "depth", "nodes", "trace", "paused", "lines", "sample",
                                        "wall"};

// The files written by default: the ones people open (the flame graph) and the one
// `martini report` and `martini convert` read; the others on request (formats=) or
// by `martini convert`. On the shop example all five take about 4x the time and 8x
// the bytes of these two (docs/performance.md, "Writing the profile").
constexpr unsigned kDefaultFormats = report::kJson | report::kHtml;

std::string ParseOptions(const char *text, Options &o) {
    using martini::clients::ParseCount;
    o.out.name = "cgprof";
    o.out.formats = kDefaultFormats;
    std::vector<martini::clients::Option> items;
    if (std::string e = martini::clients::SplitOptions(text, items); !e.empty()) return e;
    for (const auto &it : items) {
        const std::string &k = it.key;
        if (std::string e = martini::clients::CheckOptionName(k, kOptionNames); !e.empty()) return e;
        std::uint64_t n = 0;
        auto needValue = [&]() -> std::string {
            return it.hasValue && !it.value.empty() ? "" : "option '" + k + "' needs a value (" + k + "=...)";
        };
        if ((k == "counts" || k == "time" || k == "cpu" || k == "paused" || k == "lines") && it.hasValue) {
            return "option '" + k + "' takes no value";
        }
        if (k == "wall" && it.hasValue) return "option 'wall' takes no value";
        if (k == "counts" || k == "cpu" || k == "include" || k == "exclude" || k == "filter" || k == "lines") {
            o.exactOnly = true;
        }
        if (k == "sample") {
            o.sampleHz = kDefaultSamplingHz;
            if (it.hasValue && (!ParseCount(it.value, n) || n == 0 || n > kMaxSamplingHz)) {
                return "option 'sample': '" + it.value + "' is not a rate in Hz (1 to " + std::to_string(kMaxSamplingHz) + ")";
            }
            if (it.hasValue) o.sampleHz = static_cast<unsigned>(n);
        } else if (k == "wall") o.wall = true;
        else if (k == "counts") o.time = false;
        else if (k == "time") o.time = true;
        else if (k == "cpu") o.cpu = true;
        else if (k == "paused") o.paused = true;
        else if (k == "lines") o.lines = true;
        else if (k == "include" || k == "exclude") {
            if (auto e = needValue(); !e.empty()) return e;
            (k == "include" ? o.includes : o.excludes).push_back(it.value);
        } else if (k == "depth" || k == "trace" || k == "nodes") {
            if (auto e = needValue(); !e.empty()) return e;
            if (!ParseCount(it.value, n)) return "option '" + k + "': '" + it.value + "' is not a count";
            if (k == "depth" && (n == 0 || n > 1000000)) return "option 'depth': must be between 1 and 1000000";
            if (k == "nodes" && (n < 2 || n > 100000000)) return "option 'nodes': must be between 2 and 100000000";
            if (k == "depth") o.depth = n;
            else if (k == "nodes") o.nodes = n;
            else {
                o.trace = n;
                o.traceGiven = true;
            }
        } else if (k == "filter") {
            if (auto e = needValue(); !e.empty()) return e;
            o.filter = it.value;
        } else if (std::string error; o.out.Parse(k, it.value, error)) {
            if (!error.empty()) return error;
        } else {
            return "option '" + k + "' is known but not handled";
        }
    }
    if (o.wall && o.sampleHz == 0) return "option 'wall' needs sample mode (sample[=HZ],wall)";
    if (o.sampleHz != 0 && o.exactOnly) {
        return "sample mode takes none of counts, cpu, include=, exclude=, filter=, lines (SampleHit has no "
               "filters; its stacks have their lines)";
    }
    if (o.out.formats & report::kPprof) o.lines = true;
    if (o.cpu && !o.time) return "option 'cpu' needs time mode (drop 'counts')";
    if (!o.filter.empty() && (!o.includes.empty() || !o.excludes.empty())) {
        return "give either filter= or include=/exclude=, not both";
    }
    return "";
}

std::string FilterRules(const Options &o) {
    std::string line = o.filter;
    if (line.empty()) {
        for (const auto &p : o.excludes) line += (line.empty() ? "-" : "|-") + p;
        for (const auto &p : o.includes) line += (line.empty() ? "+" : "|+") + p;
    }
    return line;
}

SampledOptions SampledOptionsOf(const Options &o) {
    SampledOptions s;
    s.hz = o.sampleHz;
    s.wall = o.wall;
    s.out = o.out;
    s.depth = o.depth;
    s.nodes = o.nodes;
    s.paused = o.paused;
    if (o.traceGiven) s.timeline = o.trace;
    return s;
}

}  // namespace cgprof

// For `martini run` and `martini attach`: the options checked before the program starts
// (martini/clients/option_names.h).
extern "C" API_EXPORT const char *MPICL_CheckOptions(const char *options) {
    return martini::clients::CheckOptions<cgprof::Options>(options, cgprof::ParseOptions, cgprof::kUsage);
}
