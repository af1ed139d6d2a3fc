// Chrome trace event JSON (the "JSON Array/Object Format" Perfetto UI and
// chrome://tracing open): complete ("X") events per recorded span, thread names as
// metadata ("M") events.
#include "martini/report/profile.h"

#include <nlohmann/json.hpp>

#include <ostream>
#include <set>

namespace martini::report {

namespace {

using nlohmann::json;

double Micros(std::uint64_t ns) { return double(ns) / 1000.0; }

void ThreadMetadata(json &events, std::uint64_t tid, const std::string &name) {
    events.push_back({{"ph", "M"}, {"pid", 1}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}});
}

json SpanArgs(const Frame &f) {
    json args = json::object();
    if (!f.signature.empty()) args["signature"] = f.signature;
    if (!f.file.empty()) args["file"] = f.file;
    return args;
}

}  // namespace

void WriteChromeTrace(const Profile &p, std::ostream &out) {
    json events = json::array();
    json meta = json::object();
    meta["tool"] = p.tool;
    meta["runtime"] = p.runtime;
    meta["mode"] = p.mode;
    events.push_back({{"ph", "M"}, {"pid", 1}, {"name", "process_name"}, {"args", {{"name", p.runtime.empty() ? p.tool : p.runtime}}}});
    if (!p.spans.empty()) {
        std::set<std::uint64_t> tids;
        for (const Span &s : p.spans) tids.insert(s.threadId);
        for (std::uint64_t tid : tids) ThreadMetadata(events, tid, p.ThreadName(tid));
        for (const Span &s : p.spans) {
            const Frame &f = p.frames[s.frame];
            events.push_back({{"ph", "X"}, {"pid", 1}, {"tid", s.threadId}, {"name", f.name}, {"cat", s.category},
                              {"ts", Micros(s.startNs)}, {"dur", Micros(s.durationNs)}, {"args", SpanArgs(f)}});
        }
        meta["synthesized"] = false;
    } else {
        // No recorded spans: each thread's tree as a flame chart, children side by side
        // inside their parent, widths from the default metric.
        const std::size_t metric = p.defaultMetric;
        const bool isTime = metric < p.metrics.size() && p.metrics[metric].unit == "nanoseconds";
        for (const Tree &t : p.threads) {
            if (t.nodes.empty()) continue;
            ThreadMetadata(events, t.threadId, p.ThreadName(t.threadId));
            const auto totals = Totals(t, p.metrics.size());
            // Widths in ns; counts and bytes shown as 1 us per unit.
            auto width = [&](std::uint32_t n) { return metric < p.metrics.size() ? totals[n][metric] * (isTime ? 1 : 1000) : 0; };
            std::vector<std::pair<std::uint32_t, std::uint64_t>> work;  // node, start
            std::uint64_t start = 0;
            for (std::uint32_t c : t.nodes[0].children) {
                work.emplace_back(c, start);
                start += width(c);
            }
            while (!work.empty()) {
                const auto [n, s] = work.back();
                work.pop_back();
                const Node &node = t.nodes[n];
                const Frame &f = p.frames[node.frame];
                json args = SpanArgs(f);
                for (std::size_t k = 0; k < p.metrics.size(); ++k) args[p.metrics[k].name] = totals[n][k];
                events.push_back({{"ph", "X"}, {"pid", 1}, {"tid", t.threadId}, {"name", f.name}, {"cat", "tree"},
                                  {"ts", Micros(s)}, {"dur", Micros(width(n))}, {"args", std::move(args)}});
                std::uint64_t childStart = s;
                for (std::uint32_t c : node.children) {
                    work.emplace_back(c, childStart);
                    childStart += width(c);
                }
            }
        }
        meta["synthesized"] = true;
        if (metric < p.metrics.size()) meta["widths"] = p.metrics[metric].name + (isTime ? "" : " (1 us per unit)");
    }
    json doc{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"otherData", std::move(meta)}};
    out << doc.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace martini::report
