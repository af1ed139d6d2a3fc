// The profile model: trees, merge, totals, top-N tables, collapsed stacks, file sets.
#include "martini/report/profile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <unordered_map>

namespace martini::report {

std::uint32_t Tree::Add(std::uint32_t parent, std::uint32_t frame, std::size_t metrics) {
    const auto index = static_cast<std::uint32_t>(nodes.size());
    Node node;
    node.frame = frame;
    node.parent = parent;
    node.self.assign(metrics, 0);
    nodes.push_back(std::move(node));
    if (parent != kNoParent) nodes[parent].children.push_back(index);
    return index;
}

std::uint32_t Tree::ChildOf(std::uint32_t parent, std::uint32_t frame, std::size_t metrics) {
    for (std::uint32_t child : nodes[parent].children) {
        if (nodes[child].frame == frame) return child;
    }
    return Add(parent, frame, metrics);
}

void Tree::Clear(std::size_t metrics) {
    nodes.clear();
    Add(kNoParent, kRootFrame, metrics);
}

int Profile::MetricIndex(const std::string &name) const {
    for (std::size_t i = 0; i < metrics.size(); ++i) {
        if (metrics[i].name == name) return static_cast<int>(i);
    }
    return -1;
}

std::string Profile::ThreadName(std::uint64_t threadId) const {
    for (const Tree &t : threads) {
        if (t.threadId == threadId && !t.threadName.empty()) return t.threadName;
    }
    for (const ThreadInfo &t : threadNames) {
        if (t.id == threadId && !t.name.empty()) return t.name;
    }
    return "thread " + std::to_string(threadId);
}

void Profile::Merge() {
    const std::size_t m = metrics.size();
    merged = Tree{};
    merged.threadName = "all threads";
    merged.Clear(m);
    // Map each thread's node to its merged node; parents come first, so one pass.
    std::vector<std::uint32_t> to;
    for (const Tree &tree : threads) {
        to.assign(tree.nodes.size(), 0);
        for (std::uint32_t i = 0; i < tree.nodes.size(); ++i) {
            const Node &n = tree.nodes[i];
            const std::uint32_t target = n.parent == kNoParent ? 0 : merged.ChildOf(to[n.parent], n.frame, m);
            to[i] = target;
            for (std::size_t k = 0; k < m && k < n.self.size(); ++k) merged.nodes[target].self[k] += n.self[k];
        }
    }
}

std::vector<std::vector<std::uint64_t>> Totals(const Tree &tree, std::size_t metrics) {
    std::vector<std::vector<std::uint64_t>> totals(tree.nodes.size());
    for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
        totals[i].assign(metrics, 0);
        for (std::size_t k = 0; k < metrics && k < tree.nodes[i].self.size(); ++k) totals[i][k] = tree.nodes[i].self[k];
    }
    // Children come after parents: sum backwards.
    for (std::size_t i = tree.nodes.size(); i-- > 1;) {
        const std::uint32_t p = tree.nodes[i].parent;
        if (p == kNoParent) continue;
        for (std::size_t k = 0; k < metrics; ++k) totals[p][k] += totals[i][k];
    }
    return totals;
}

std::vector<TableRow> TopFrames(const Profile &profile, std::size_t metric) {
    const Tree &tree = profile.merged;
    const std::size_t m = profile.metrics.size();
    const int callsIndex = profile.MetricIndex("calls");
    const auto totals = Totals(tree, m);
    std::vector<TableRow> rows(profile.frames.size());
    for (std::uint32_t f = 0; f < rows.size(); ++f) rows[f].frame = f;
    std::vector<bool> used(profile.frames.size(), false);
    // Depth-first with the set of frames on the current path, so a frame's total
    // counts only its outermost activations.
    std::vector<std::uint32_t> onPath(profile.frames.size(), 0);
    struct Item {
        std::uint32_t node;
        bool exit;
    };
    std::vector<Item> work{{0, false}};
    while (!work.empty()) {
        const Item item = work.back();
        work.pop_back();
        const Node &n = tree.nodes[item.node];
        if (item.exit) {
            if (n.frame != kRootFrame) --onPath[n.frame];
            continue;
        }
        if (n.frame != kRootFrame) {
            TableRow &row = rows[n.frame];
            used[n.frame] = true;
            if (metric < m) row.self += n.self[metric];
            if (callsIndex >= 0) row.calls += n.self[callsIndex];
            if (onPath[n.frame] == 0 && metric < m) row.total += totals[item.node][metric];
            ++onPath[n.frame];
            work.push_back({item.node, true});
        }
        for (std::uint32_t c : n.children) work.push_back({c, false});
    }
    std::vector<TableRow> out;
    for (const TableRow &r : rows) {
        if (used[r.frame]) out.push_back(r);
    }
    std::stable_sort(out.begin(), out.end(), [](const TableRow &a, const TableRow &b) {
        if (a.self != b.self) return a.self > b.self;
        if (a.total != b.total) return a.total > b.total;
        return a.calls > b.calls;
    });
    return out;
}

namespace {

std::string Percent(std::uint64_t part, std::uint64_t whole) {
    if (whole == 0) return "-";
    std::ostringstream s;
    s << std::fixed << std::setprecision(1) << 100.0 * double(part) / double(whole) << "%";
    return s.str();
}

// Times in the unit that suits the profile's whole: us, ms or s.
struct TimeUnit {
    const char *name;
    double divisor;
};

TimeUnit UnitFor(std::uint64_t wholeNs) {
    if (wholeNs < 10'000'000) return {"us", 1e3};
    if (wholeNs < 100'000'000'000) return {"ms", 1e6};
    return {"s", 1e9};
}

std::string InUnit(std::uint64_t ns, TimeUnit unit) {
    std::ostringstream s;
    const double v = double(ns) / unit.divisor;
    s << std::fixed << std::setprecision(v < 10 ? 3 : 1) << v;
    return s.str();
}

// The metric a table ranks by: wall time when measured, else the default metric.
std::size_t RankingMetric(const Profile &profile) {
    const int wall = profile.MetricIndex("wall");
    if (wall >= 0) return static_cast<std::size_t>(wall);
    return profile.defaultMetric < profile.metrics.size() ? profile.defaultMetric : 0;
}

}  // namespace

void WriteTopTable(const Profile &profile, std::ostream &out, std::size_t topN, int rankBy) {
    if (profile.metrics.empty()) {
        out << "(empty profile)\n";
        return;
    }
    const std::size_t metric = rankBy >= 0 && std::size_t(rankBy) < profile.metrics.size() ? std::size_t(rankBy) : RankingMetric(profile);
    const Metric &rank = profile.metrics[metric];
    const bool isTime = rank.unit == "nanoseconds";
    const bool hasCalls = profile.MetricIndex("calls") >= 0;
    const auto rows = TopFrames(profile, metric);
    const auto totals = Totals(profile.merged, profile.metrics.size());
    const std::uint64_t whole = totals.empty() ? 0 : totals[0][metric];

    std::size_t nameWidth = 6;
    const std::size_t shown = std::min(topN, rows.size());
    for (std::size_t i = 0; i < shown; ++i) nameWidth = std::max(nameWidth, profile.frames[rows[i].frame].name.size());
    nameWidth = std::min<std::size_t>(nameWidth, 70);

    out << profile.tool << ": top " << shown << " of " << rows.size() << " methods by self "
        << rank.name << " (" << profile.threads.size() << " thread" << (profile.threads.size() == 1 ? "" : "s");
    const TimeUnit unit = UnitFor(whole);
    if (isTime) out << ", " << InUnit(whole, unit) << " " << unit.name << " in all";
    else out << ", " << whole << " " << rank.name << " in all";
    out << ")\n";
    out << std::left << std::setw(int(nameWidth)) << "method" << std::right;
    if (hasCalls) out << std::setw(12) << "calls";
    out << std::setw(9) << "self %" << std::setw(9) << "total %";
    if (isTime) out << std::setw(12) << (std::string("self ") + unit.name) << std::setw(12) << (std::string("total ") + unit.name);
    else if (!hasCalls || rank.name != "calls") out << std::setw(14) << ("self " + rank.name) << std::setw(14) << ("total " + rank.name);
    out << "\n";
    for (std::size_t i = 0; i < shown; ++i) {
        const TableRow &r = rows[i];
        std::string name = profile.frames[r.frame].name;
        if (name.size() > nameWidth) name = "..." + name.substr(name.size() - nameWidth + 3);
        out << std::left << std::setw(int(nameWidth)) << name << std::right;
        if (hasCalls) out << std::setw(12) << r.calls;
        out << std::setw(9) << Percent(r.self, whole) << std::setw(9) << Percent(r.total, whole);
        if (isTime) out << std::setw(12) << InUnit(r.self, unit) << std::setw(12) << InUnit(r.total, unit);
        else if (!hasCalls || rank.name != "calls") out << std::setw(14) << r.self << std::setw(14) << r.total;
        out << "\n";
    }
    for (const auto &[name, value] : profile.counters) {
        if (value != 0) out << "  " << name << ": " << value << "\n";
    }
}

void WriteCollapsed(const Profile &profile, std::ostream &out, std::size_t metric, double minShare) {
    const Tree &tree = profile.merged;
    if (metric >= profile.metrics.size() || tree.nodes.empty()) return;
    const auto totals = Totals(tree, profile.metrics.size());
    const double threshold = double(totals[0][metric]) * minShare;
    // Names with ';' (separates frames) and ' ' (separates the count) replaced.
    std::vector<std::string> names(profile.frames.size());
    for (std::size_t f = 0; f < names.size(); ++f) {
        names[f] = profile.frames[f].name;
        std::replace(names[f].begin(), names[f].end(), ';', ':');
        std::replace(names[f].begin(), names[f].end(), ' ', '_');
    }
    // Depth first with one path buffer: memory stays O(depth), not O(nodes x depth).
    std::string path;
    struct Item {
        std::uint32_t node;
        std::size_t pathLength;  // the buffer's length before this node's name
    };
    std::vector<Item> work;
    for (auto it = tree.nodes[0].children.rbegin(); it != tree.nodes[0].children.rend(); ++it) work.push_back({*it, 0});
    while (!work.empty()) {
        const Item item = work.back();
        work.pop_back();
        const Node &n = tree.nodes[item.node];
        // A subtree below the threshold cannot hold a line above it.
        if (double(totals[item.node][metric]) < threshold || totals[item.node][metric] == 0) continue;
        path.resize(item.pathLength);
        if (!path.empty()) path += ';';
        path += names[n.frame];
        if (n.self[metric] != 0 && double(n.self[metric]) >= threshold) out << path << ' ' << n.self[metric] << '\n';
        const std::size_t length = path.size();
        for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) work.push_back({*it, length});
    }
}

std::string ParseFormats(const std::string &text, unsigned &formats) {
    formats = 0;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = text.find('+', start);
        const std::string word = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (word == "json") formats |= kJson;
        else if (word == "collapsed") formats |= kCollapsed;
        else if (word == "chrome") formats |= kChrome;
        else if (word == "pprof") formats |= kPprof;
        else if (word == "html") formats |= kHtml;
        else if (word == "all") formats |= kAllFormats;
        else if (word == "none") {
        } else {
            return "unknown format '" + word + "' (expected json, collapsed, chrome, pprof, html, all or none, joined with '+')";
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return "";
}

std::string FileName(const std::string &base, Format format) {
    switch (format) {
        case kJson: return base + ".json";
        case kCollapsed: return base + ".collapsed";
        case kChrome: return base + ".trace.json";
        case kPprof: return base + ".pb.gz";
        case kHtml: return base + ".html";
        default: return base;
    }
}

void WriteFiles(const Profile &profile, const std::string &dir, const std::string &base, unsigned formats,
                std::vector<std::string> &written, std::vector<std::string> &errors) {
    std::error_code ec;
    if (!dir.empty()) {
        std::filesystem::create_directories(dir, ec);
        if (ec) {
            errors.push_back("cannot create the output directory '" + dir + "': " + ec.message());
            return;
        }
    }
    const std::string prefix = dir.empty() ? "" : (dir.back() == '/' ? dir : dir + "/");
    for (Format f : {kJson, kCollapsed, kChrome, kPprof, kHtml}) {
        if (!(formats & f)) continue;
        const std::string path = prefix + FileName(base, f);
        if (f == kPprof) {
            const std::string error = WritePprof(profile, path);
            if (error.empty()) written.push_back(path);
            else errors.push_back(error);
            continue;
        }
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!out) {
            errors.push_back("cannot write '" + path + "': " + std::strerror(errno));
            continue;
        }
        switch (f) {
            case kJson: WriteJson(profile, out); break;
            case kCollapsed: WriteCollapsed(profile, out, profile.defaultMetric); break;
            case kChrome: WriteChromeTrace(profile, out); break;
            case kHtml: WriteHtml(profile, out); break;
            default: break;
        }
        out.flush();
        if (!out) errors.push_back("cannot write '" + path + "': " + std::strerror(errno));
        else written.push_back(path);
    }
}

}  // namespace martini::report
