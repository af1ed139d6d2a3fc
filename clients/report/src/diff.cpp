// Comparing two profiles (views.h, `martini diff`): the metric they share, the change
// per method as a table, and the differential flame graph's tree.
#include "martini/report/views.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <unordered_map>

namespace martini::report {

namespace {

std::string MetricNames(const Profile &p) {
    std::string names;
    for (const Metric &m : p.metrics) names.append(names.empty() ? "" : ", ").append(m.name);
    return names.empty() ? "none" : names;
}

std::string Amount(double value, const QuantityUnit &unit, bool sign = false) {
    if (sign && value == 0) return "0";
    char text[48];
    const char *format = sign ? "%+.*f" : "%.*f";
    const double v = value / unit.divisor;
    const int decimals = unit.divisor == 1 ? 0 : (std::abs(v) < 10 ? 3 : 1);
    std::snprintf(text, sizeof text, format, decimals, v);
    return text;
}

std::string Ratio(std::uint64_t base, std::uint64_t now) {
    if (base == 0) return now == 0 ? "-" : "new";
    if (now == 0) return "gone";
    char text[32];
    std::snprintf(text, sizeof text, "x%.2f", double(now) / double(base));
    return text;
}

std::uint64_t Whole(const Profile &p, std::size_t metric) {
    std::uint64_t sum = 0;
    for (const Node &n : p.merged.nodes) sum += metric < n.self.size() ? n.self[metric] : 0;
    return sum;
}

// Columns as wide as their widest cell, two spaces apart; the first left-aligned.
void WriteColumns(const std::vector<std::vector<std::string>> &table, std::ostream &out) {
    std::vector<std::size_t> widths(table.empty() ? 0 : table[0].size(), 0);
    for (const auto &cells : table) {
        for (std::size_t c = 0; c < cells.size(); ++c) widths[c] = std::max(widths[c], cells[c].size());
    }
    for (const auto &cells : table) {
        std::string line = cells[0] + std::string(widths[0] - cells[0].size(), ' ');
        for (std::size_t c = 1; c < cells.size(); ++c) line.append(2 + widths[c] - cells[c].size(), ' ').append(cells[c]);
        out << line << "\n";
    }
}

}  // namespace

std::string DiffMetric(const Profile &base, const Profile &now, const std::string &name, std::size_t &baseMetric,
                       std::size_t &newMetric) {
    std::string wanted = name;
    if (wanted.empty()) {
        if (now.metrics.empty()) return "the new profile has no metrics";
        wanted = now.MetricIndex("wall") >= 0 ? "wall" : now.metrics[std::min(now.defaultMetric, now.metrics.size() - 1)].name;
    }
    const int b = base.MetricIndex(wanted), n = now.MetricIndex(wanted);
    if (n < 0) return "no metric '" + wanted + "' in the new profile; it has " + MetricNames(now);
    if (b < 0) {
        return "no metric '" + wanted + "' in the base profile; it has " + MetricNames(base) +
               (name.empty() ? " (--metric NAME chooses another)" : "");
    }
    if (base.metrics[std::size_t(b)].unit != now.metrics[std::size_t(n)].unit) {
        return "metric '" + wanted + "' is in " + base.metrics[std::size_t(b)].unit + " in the base profile but in " +
               now.metrics[std::size_t(n)].unit + " in the new one";
    }
    baseMetric = std::size_t(b);
    newMetric = std::size_t(n);
    return "";
}

std::vector<DiffRow> DiffMethods(const Profile &base, const Profile &now, std::size_t baseMetric, std::size_t newMetric) {
    std::map<std::string, DiffRow> byName;
    for (const TableRow &r : TopFrames(base, baseMetric)) {
        DiffRow &row = byName[base.frames[r.frame].name];
        row.base += r.self;
    }
    for (const TableRow &r : TopFrames(now, newMetric)) {
        DiffRow &row = byName[now.frames[r.frame].name];
        row.now += r.self;
    }
    std::vector<DiffRow> rows;
    for (auto &[name, row] : byName) {
        row.method = name;
        rows.push_back(row);
    }
    auto change = [](const DiffRow &r) { return r.now > r.base ? r.now - r.base : r.base - r.now; };
    std::stable_sort(rows.begin(), rows.end(), [&](const DiffRow &a, const DiffRow &b) { return change(a) > change(b); });
    return rows;
}

void WriteDiffTable(const Profile &base, const Profile &now, std::size_t baseMetric, std::size_t newMetric,
                    std::ostream &out, std::size_t topN) {
    const Metric &metric = now.metrics[newMetric];
    const std::uint64_t baseWhole = Whole(base, baseMetric), newWhole = Whole(now, newMetric);
    const QuantityUnit unit = UnitFor(metric, std::max(baseWhole, newWhole));
    const std::string suffix = unit.name != metric.name ? " " + unit.name : std::string();
    const auto rows = DiffMethods(base, now, baseMetric, newMetric);
    const std::size_t shown = std::min(topN, rows.size());
    out << "diff of self " << metric.name << " per method: base " << Amount(double(baseWhole), unit) << suffix << ", new "
        << Amount(double(newWhole), unit) << suffix << " ("
        << Amount(double(newWhole) - double(baseWhole), unit, true) << suffix << ", " << Ratio(baseWhole, newWhole)
        << "); top " << shown << " of " << rows.size() << " methods by change\n";
    const std::string in = " " + unit.name;
    std::vector<std::vector<std::string>> table{{"method", "base" + in, "new" + in, "delta" + in, "ratio"}};
    for (std::size_t i = 0; i < shown; ++i) {
        const DiffRow &r = rows[i];
        std::string name = r.method.size() > 70 ? "..." + r.method.substr(r.method.size() - 67) : r.method;
        table.push_back({std::move(name), Amount(double(r.base), unit), Amount(double(r.now), unit),
                         Amount(double(r.now) - double(r.base), unit, true), Ratio(r.base, r.now)});
    }
    WriteColumns(table, out);
}

Profile DiffProfile(const Profile &base, const Profile &now, std::size_t baseMetric, std::size_t newMetric) {
    Profile d;
    d.tool = "martini diff";
    d.mode = now.metrics[newMetric].name;
    d.runtime = now.runtime;
    d.metrics = {{"new", now.metrics[newMetric].unit}, {"base", now.metrics[newMetric].unit}};
    d.merged.threadName = "all threads";
    d.merged.Clear(2);
    std::unordered_map<std::string, std::uint32_t> frameIndex;
    std::unordered_map<std::uint64_t, std::uint32_t> childIndex;  // (parent << 32 | frame) -> node
    auto add = [&](const Profile &p, std::size_t metric, std::size_t slot) {
        std::vector<std::uint32_t> frameTo(p.frames.size());
        for (std::size_t f = 0; f < p.frames.size(); ++f) {
            const auto [it, added] = frameIndex.emplace(p.frames[f].name, std::uint32_t(d.frames.size()));
            if (added) d.frames.push_back(p.frames[f]);
            frameTo[f] = it->second;
        }
        std::vector<std::uint32_t> to(p.merged.nodes.size(), 0);
        for (std::uint32_t i = 1; i < p.merged.nodes.size(); ++i) {
            const Node &n = p.merged.nodes[i];
            const std::uint32_t frame = n.frame < frameTo.size() ? frameTo[n.frame] : kRootFrame;
            const auto [it, added] = childIndex.emplace((std::uint64_t(to[n.parent]) << 32) | frame, 0);
            if (added) it->second = d.merged.Add(to[n.parent], frame, 2);
            to[i] = it->second;
            d.merged.nodes[to[i]].self[slot] += metric < n.self.size() ? n.self[metric] : 0;
        }
    };
    add(now, newMetric, 0);
    add(base, baseMetric, 1);
    return d;
}

HtmlStats WriteDiffHtml(const Profile &base, const Profile &now, std::size_t baseMetric, std::size_t newMetric,
                        const std::string &baseName, const std::string &newName, std::ostream &out) {
    HtmlOptions options;
    options.diff = {now.metrics[newMetric].name, baseName, newName};
    return WriteHtml(DiffProfile(base, now, baseMetric, newMetric), out, options);
}

}  // namespace martini::report
