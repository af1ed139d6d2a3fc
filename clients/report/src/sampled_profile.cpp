// Sampled profiles' lines and time: the hot-lines table, cutting a profile to a time
// window, and the timeline laid out as spans for the Chrome trace.
#include "martini/report/profile.h"

#include "table_text.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace martini::report {

namespace {

std::uint64_t CounterOf(const Profile &p, const std::string &name) {
    for (const auto &[key, value] : p.counters) {
        if (key == name) return value;
    }
    return 0;
}

using detail::MulDiv;

std::uint64_t LineSamples(const Node &n) {
    std::uint64_t all = 0;
    for (const auto &[line, samples] : n.selfLines) all += samples;
    return all;
}

struct LineRow {
    std::uint32_t frame = 0;
    std::uint32_t line = 0;
    std::uint64_t self = 0;
};

}  // namespace

void WriteHotLines(const Profile &profile, std::ostream &out, std::size_t topN, int rankBy) {
    if (profile.metrics.empty()) {
        out << "(empty profile)\n";
        return;
    }
    const std::size_t metric = rankBy >= 0 && std::size_t(rankBy) < profile.metrics.size() ? std::size_t(rankBy)
                               : profile.defaultMetric < profile.metrics.size()            ? profile.defaultMetric
                                                                                           : 0;
    // Per (frame, line) the self value of the samples at that line: each node's self
    // value shared out over its lines by their samples.
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> byLine;
    std::uint64_t whole = 0;
    for (const Node &n : profile.merged.nodes) {
        if (metric >= n.self.size()) continue;
        whole += n.self[metric];
        const std::uint64_t samples = LineSamples(n);
        for (const auto &[line, count] : n.selfLines) byLine[{n.frame, line}] += MulDiv(n.self[metric], count, samples);
    }
    if (byLine.empty()) {
        out << profile.tool << ": the profile has no lines (only sampled profiles whose runtime gives each frame's line have them)\n";
        return;
    }
    std::vector<LineRow> rows;
    rows.reserve(byLine.size());
    for (const auto &[key, self] : byLine) rows.push_back({key.first, key.second, self});
    std::stable_sort(rows.begin(), rows.end(), [](const LineRow &a, const LineRow &b) { return a.self > b.self; });
    const Metric &rank = profile.metrics[metric];
    const QuantityUnit unit = UnitFor(rank, whole);
    const std::size_t shown = std::min(topN, rows.size());
    out << profile.tool << ": top " << shown << " of " << rows.size() << " lines by self " << rank.name << " ("
        << rank.name << " in all: " << detail::InUnit(whole, unit) << (unit.name == rank.name ? "" : " " + unit.name)
        << ")\n";
    std::vector<std::vector<std::string>> table{{"method", "line", "self %", "self " + unit.name}};
    for (std::size_t i = 0; i < shown; ++i) {
        const LineRow &r = rows[i];
        const Frame &f = profile.frames[r.frame];
        std::string name = f.name;
        if (name.size() > 60) name = "..." + name.substr(name.size() - 57);
        std::string where = (f.file.empty() ? std::string("line ") : f.file + ":") + std::to_string(r.line);
        table.push_back({std::move(name), std::move(where), detail::Percent(r.self, whole), detail::InUnit(r.self, unit)});
    }
    detail::WriteAligned(table, out);
}

std::string KeepTimeWindow(Profile &p, std::uint64_t fromNs, std::uint64_t toNs) {
    if (p.timeline.empty()) {
        return "the profile has no timeline (samples with their times): only sampled profiles keep one";
    }
    if (const std::uint64_t notKept = CounterOf(p, kTimelineNotKept); notKept != 0) {
        return "the profile's timeline is not whole (" + std::to_string(notKept) +
               " samples past its budget were not kept): a window of it would leave them out";
    }
    if (fromNs >= toNs) return "the window is empty: --from must be before --to";
    std::vector<std::vector<std::uint64_t>> all(p.threads.size()), in(p.threads.size());
    std::vector<std::map<std::uint32_t, std::map<std::uint32_t, std::uint64_t>>> lines(p.threads.size());
    for (std::size_t t = 0; t < p.threads.size(); ++t) {
        all[t].assign(p.threads[t].nodes.size(), 0);
        in[t].assign(p.threads[t].nodes.size(), 0);
    }
    std::uint64_t start = p.timeline.front().timeNs;
    for (const TimedSample &s : p.timeline) start = std::min(start, s.timeNs);
    std::vector<TimedSample> kept;
    for (const TimedSample &s : p.timeline) {
        if (s.tree >= p.threads.size() || s.node >= p.threads[s.tree].nodes.size()) {
            return "the profile's timeline names a node its threads do not have";
        }
        ++all[s.tree][s.node];
        const std::uint64_t at = s.timeNs - start;
        if (at < fromNs || at >= toNs) continue;
        ++in[s.tree][s.node];
        if (s.line != 0) ++lines[s.tree][s.node][s.line];
        kept.push_back(s);
    }
    for (std::size_t t = 0; t < p.threads.size(); ++t) {
        for (std::uint32_t n = 0; n < p.threads[t].nodes.size(); ++n) {
            Node &node = p.threads[t].nodes[n];
            for (std::uint64_t &v : node.self) v = MulDiv(v, in[t][n], all[t][n]);
            node.selfLines.clear();
            if (auto it = lines[t].find(n); it != lines[t].end()) node.selfLines.assign(it->second.begin(), it->second.end());
        }
    }
    p.timeline = std::move(kept);
    p.spans.clear();
    p.Merge();
    return "";
}

std::vector<Span> TimelineSpans(const Profile &p) {
    std::vector<Span> spans;
    const std::uint64_t period = p.periodNs != 0 ? p.periodNs : 1'000'000;
    std::vector<std::vector<const TimedSample *>> perTree(p.threads.size());
    for (const TimedSample &s : p.timeline) {
        if (s.tree < p.threads.size() && s.node < p.threads[s.tree].nodes.size()) perTree[s.tree].push_back(&s);
    }
    struct Open {
        std::uint32_t node;
        std::uint64_t start;
    };
    for (std::size_t t = 0; t < perTree.size(); ++t) {
        const Tree &tree = p.threads[t];
        std::stable_sort(perTree[t].begin(), perTree[t].end(),
                         [](const TimedSample *a, const TimedSample *b) { return a->timeNs < b->timeNs; });
        std::vector<Open> open;  // outermost first
        std::vector<std::uint32_t> path;
        std::uint64_t last = 0;
        auto closeFrom = [&](std::size_t depth, std::uint64_t end) {
            while (open.size() > depth) {
                const Open &o = open.back();
                spans.push_back({tree.threadId, tree.nodes[o.node].frame, o.start, end > o.start ? end - o.start : 0, "sample"});
                open.pop_back();
            }
        };
        for (const TimedSample *s : perTree[t]) {
            if (!open.empty() && s->timeNs > last + 2 * period) closeFrom(0, last + period);
            path.clear();
            for (std::uint32_t n = s->node; n != 0 && n != kNoParent; n = tree.nodes[n].parent) path.push_back(n);
            std::reverse(path.begin(), path.end());
            std::size_t same = 0;
            while (same < open.size() && same < path.size() && open[same].node == path[same]) ++same;
            closeFrom(same, s->timeNs);
            for (std::size_t d = same; d < path.size(); ++d) open.push_back({path[d], s->timeNs});
            last = s->timeNs;
        }
        closeFrom(0, last + period);
    }
    return spans;
}

}  // namespace martini::report
