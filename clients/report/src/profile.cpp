// The profile model: trees, merge, totals, top-N tables, collapsed stacks, file sets.
#include "martini/report/profile.h"

#include "table_text.h"

#include "text_out.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace martini::report {

std::string UnnamedThreadName(std::uint64_t threadId) { return "thread " + std::to_string(threadId); }

namespace {

// One JVM field type at signature[i] ("I", "[Ljava/lang/String;") in Java's words with
// the simple class name; advances i past it. "" when it is not one.
std::string ReadableType(const std::string &signature, std::size_t &i, std::size_t end) {
    std::size_t dims = 0;
    while (i < end && signature[i] == '[') ++dims, ++i;
    if (i >= end) return "";
    std::string type;
    switch (signature[i]) {
        case 'Z': type = "boolean"; break;
        case 'B': type = "byte"; break;
        case 'C': type = "char"; break;
        case 'S': type = "short"; break;
        case 'I': type = "int"; break;
        case 'J': type = "long"; break;
        case 'F': type = "float"; break;
        case 'D': type = "double"; break;
        case 'V': type = "void"; break;
        case 'L': {
            const std::size_t semicolon = signature.find(';', i);
            if (semicolon == std::string::npos || semicolon >= end) return "";
            type = signature.substr(i + 1, semicolon - i - 1);
            if (const std::size_t slash = type.find_last_of("/."); slash != std::string::npos) type.erase(0, slash + 1);
            i = semicolon;
            break;
        }
        default: return "";
    }
    ++i;
    for (std::size_t d = 0; d < dims; ++d) type += "[]";
    return type;
}

}  // namespace

std::string ReadableParameters(const std::string &signature) {
    if (signature.empty() || signature[0] != '(') return signature;
    const std::size_t close = signature.find(')');
    if (close == std::string::npos) return signature;
    std::string out = "(";
    for (std::size_t i = 1; i < close;) {
        const std::string type = ReadableType(signature, i, close);
        if (type.empty()) return signature;
        out += (out.size() > 1 ? "," : "") + type;
    }
    return out + ")";
}

void NameOverloads(std::vector<Frame> &frames) {
    // Twice: by parameters, then, for names still shared (bridge methods differ only
    // in their return type), by ":" and the return type.
    for (int pass = 0; pass < 2; ++pass) {
        std::unordered_map<std::string, std::unordered_set<std::string>> signatures;
        for (const Frame &f : frames) {
            if (!f.signature.empty()) signatures[f.name].insert(f.signature);
        }
        for (Frame &f : frames) {
            if (f.signature.empty()) continue;
            auto it = signatures.find(f.name);
            if (it == signatures.end() || it->second.size() < 2) continue;
            if (pass == 0) {
                // A signature that is no JVM descriptor (another runtime's) in brackets.
                f.name += f.signature[0] == '(' ? ReadableParameters(f.signature) : "[" + f.signature + "]";
                continue;
            }
            std::size_t at = f.signature.find(')');
            const std::string returned = at == std::string::npos ? "" : ReadableType(f.signature, ++at, f.signature.size());
            if (!returned.empty()) f.name += ":" + returned;
        }
    }
}

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
    return UnnamedThreadName(threadId);
}

void Profile::NameThreads() {
    for (Tree &t : threads) {
        if (t.threadName.empty()) t.threadName = UnnamedThreadName(t.threadId);
    }
    for (ThreadInfo &t : threadNames) {
        if (t.name.empty()) t.name = UnnamedThreadName(t.id);
    }
}

namespace {

// Adds `tree` to `merged` by call path (`to`: scratch).
void MergeInto(Tree &merged, const Tree &tree, std::size_t m, std::vector<std::uint32_t> &to) {
    // Map each node to its merged node; parents come first, so one pass.
    to.assign(tree.nodes.size(), 0);
    for (std::uint32_t i = 0; i < tree.nodes.size(); ++i) {
        const Node &n = tree.nodes[i];
        const std::uint32_t target = n.parent == kNoParent ? 0 : merged.ChildOf(to[n.parent], n.frame, m);
        to[i] = target;
        if (merged.nodes[target].callLine == 0) merged.nodes[target].callLine = n.callLine;
        detail::AddLines(merged.nodes[target].selfLines, n.selfLines);
        for (std::size_t k = 0; k < m && k < n.self.size(); ++k) merged.nodes[target].self[k] += n.self[k];
    }
}

}  // namespace

void Profile::Merge() {
    const std::size_t m = metrics.size();
    merged = Tree{};
    merged.threadName = "all threads";
    merged.Clear(m);
    std::vector<std::uint32_t> to;
    for (const Tree &tree : threads) MergeInto(merged, tree, m, to);
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

namespace {

// TopFrames over `tree`: the profile's merged tree, or the merge of some of its threads.
std::vector<TableRow> RankFrames(const Profile &profile, const Tree &tree, std::size_t metric) {
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

}  // namespace

std::vector<TableRow> TopFrames(const Profile &profile, std::size_t metric) {
    return RankFrames(profile, profile.merged, metric);
}

QuantityUnit UnitFor(const Metric &metric, std::uint64_t whole) {
    if (metric.unit == "nanoseconds") {
        if (whole < 10'000'000) return {"us", 1e3};
        if (whole < 100'000'000'000) return {"ms", 1e6};
        return {"s", 1e9};
    }
    if (metric.unit == "bytes") {
        if (whole < 10 * 1024) return {"B", 1};
        if (whole < 10ull * 1024 * 1024) return {"KiB", 1024.0};
        if (whole < 10ull * 1024 * 1024 * 1024) return {"MiB", 1024.0 * 1024};
        return {"GiB", 1024.0 * 1024 * 1024};
    }
    return {metric.name, 1};
}


namespace detail {

std::string Percent(std::uint64_t part, std::uint64_t whole) {
    if (whole == 0) return "-";
    std::ostringstream s;
    s << std::fixed << std::setprecision(1) << 100.0 * double(part) / double(whole) << "%";
    return s.str();
}

std::string InUnit(std::uint64_t value, const QuantityUnit &unit) {
    if (unit.divisor == 1) return std::to_string(value);
    std::ostringstream s;
    const double v = double(value) / unit.divisor;
    s << std::fixed << std::setprecision(v < 10 ? 3 : 1) << v;
    return s.str();
}

void WriteAligned(const std::vector<std::vector<std::string>> &table, std::ostream &out) {
    std::vector<std::size_t> widths(table[0].size(), 0);
    for (const auto &cells : table) {
        for (std::size_t c = 0; c < cells.size(); ++c) widths[c] = std::max(widths[c], cells[c].size());
    }
    for (const auto &cells : table) {
        std::string line = cells[0] + std::string(widths[0] - cells[0].size(), ' ');
        for (std::size_t c = 1; c < cells.size(); ++c) line += std::string(2 + widths[c] - cells[c].size(), ' ') + cells[c];
        out << line << "\n";
    }
}

void AddLines(std::vector<std::pair<std::uint32_t, std::uint64_t>> &into,
              const std::vector<std::pair<std::uint32_t, std::uint64_t>> &from) {
    if (from.empty()) return;
    if (into.empty()) {
        into = from;
        return;
    }
    std::vector<std::pair<std::uint32_t, std::uint64_t>> sum;
    sum.reserve(into.size() + from.size());
    auto a = into.cbegin();
    auto b = from.cbegin();
    while (a != into.cend() || b != from.cend()) {
        if (b == from.cend() || (a != into.cend() && a->first < b->first)) sum.push_back(*a++);
        else if (a == into.cend() || b->first < a->first) sum.push_back(*b++);
        else {
            sum.emplace_back(a->first, a->second + b->second);
            ++a;
            ++b;
        }
    }
    into = std::move(sum);
}

}  // namespace detail

namespace {

using detail::InUnit;
using detail::Percent;
using detail::WriteAligned;

// The metric a table ranks by: wall time when measured, else the default metric.
std::size_t RankingMetric(const Profile &profile) {
    const int wall = profile.MetricIndex("wall");
    if (wall >= 0) return static_cast<std::size_t>(wall);
    return profile.defaultMetric < profile.metrics.size() ? profile.defaultMetric : 0;
}

// "12 threads", or with `threads` "3 of 12 threads: those that used CPU".
std::string ThreadsShown(const Profile &profile, const TableThreads *threads) {
    const std::size_t all = profile.threads.size();
    std::string text = std::to_string(all) + (all == 1 ? " thread" : " threads");
    if (threads == nullptr) return text;
    std::size_t shown = 0;
    for (const Tree &t : profile.threads) {
        shown += std::count(threads->ids.begin(), threads->ids.end(), t.threadId) != 0 ? 1 : 0;
    }
    return std::to_string(shown) + " of " + text + (threads->what.empty() ? "" : ": " + threads->what);
}

// The table over `merged`: the profile's merged tree (`threads` null), or the merge of
// the threads `threads` names.
void WriteTable(const Profile &profile, const Tree &merged, std::ostream &out, std::size_t topN, int rankBy,
                const TableThreads *threads) {
    if (profile.metrics.empty()) {
        out << "(empty profile)\n";
        return;
    }
    const std::size_t metric = rankBy >= 0 && std::size_t(rankBy) < profile.metrics.size() ? std::size_t(rankBy) : RankingMetric(profile);
    const Metric &rank = profile.metrics[metric];
    const int callsIndex = profile.MetricIndex("calls");
    const bool hasCalls = callsIndex >= 0;
    const auto rows = RankFrames(profile, merged, metric);
    const auto totals = Totals(merged, profile.metrics.size());
    const std::uint64_t whole = totals.empty() ? 0 : totals[0][metric];
    const QuantityUnit unit = UnitFor(rank, whole);
    const bool showValues = !(hasCalls && std::size_t(callsIndex) == metric);  // calls are their own column
    const std::size_t shown = std::min(topN, rows.size());

    out << profile.tool << ": top " << shown << " of " << rows.size() << " methods by self " << rank.name << " ("
        << ThreadsShown(profile, threads) << "; " << rank.name << " in all: " << InUnit(whole, unit)
        << (unit.name == rank.name ? "" : " " + unit.name) << ")\n";
    if (threads != nullptr && !threads->note.empty()) out << "  " << threads->note << "\n";

    // Cells first, then the columns aligned.
    std::vector<std::vector<std::string>> table;
    std::vector<std::string> header{"method"};
    if (hasCalls) header.push_back("calls");
    header.insert(header.end(), {"self %", "total %"});
    if (showValues) header.insert(header.end(), {"self " + unit.name, "total " + unit.name});
    table.push_back(std::move(header));
    for (std::size_t i = 0; i < shown; ++i) {
        const TableRow &r = rows[i];
        std::string name = profile.frames[r.frame].name;
        if (name.size() > 70) name = "..." + name.substr(name.size() - 67);
        std::vector<std::string> cells{std::move(name)};
        if (hasCalls) cells.push_back(std::to_string(r.calls));
        cells.insert(cells.end(), {Percent(r.self, whole), Percent(r.total, whole)});
        if (showValues) cells.insert(cells.end(), {InUnit(r.self, unit), InUnit(r.total, unit)});
        table.push_back(std::move(cells));
    }
    WriteAligned(table, out);
    for (const auto &[name, value] : profile.counters) {
        if (value != 0) out << "  " << name << ": " << value << "\n";
    }
}

}  // namespace

void WriteTopTable(const Profile &profile, std::ostream &out, std::size_t topN, int rankBy) {
    WriteTable(profile, profile.merged, out, topN, rankBy, nullptr);
}

void WriteTopTable(const Profile &profile, std::ostream &out, std::size_t topN, int rankBy,
                   const TableThreads &threads) {
    Tree merged;
    merged.threadName = "all threads";
    merged.Clear(profile.metrics.size());
    std::vector<std::uint32_t> to;
    for (const Tree &tree : profile.threads) {
        if (std::count(threads.ids.begin(), threads.ids.end(), tree.threadId) != 0) {
            MergeInto(merged, tree, profile.metrics.size(), to);
        }
    }
    WriteTable(profile, merged, out, topN, rankBy, &threads);
}

namespace {

// The merged tree as collapsed stacks show it: recursion folded, depth capped, one
// value per node (see WriteCollapsed).
constexpr std::uint32_t kCutFrame = 0xfffffffeu;

struct FoldedTree {
    std::vector<std::uint32_t> frame, parent, depth;
    std::vector<std::uint64_t> value;
    std::vector<std::vector<std::uint32_t>> children;
    std::unordered_map<std::uint64_t, std::uint32_t> childIndex;  // (parent << 32 | frame) -> node

    std::uint32_t Child(std::uint32_t p, std::uint32_t f) {
        const auto [it, added] = childIndex.emplace((std::uint64_t(p) << 32) | f, std::uint32_t(frame.size()));
        if (!added) return it->second;
        frame.push_back(f);
        parent.push_back(p);
        depth.push_back(depth[p] + 1);
        value.push_back(0);
        children.emplace_back();
        children[p].push_back(it->second);
        return it->second;
    }
};

FoldedTree Fold(const Tree &tree, std::size_t metric, std::size_t maxDepth, CollapsedStats &stats) {
    FoldedTree f;
    f.frame = {kRootFrame};
    f.parent = {kNoParent};
    f.depth = {0};
    f.value = {0};
    f.children.emplace_back();
    std::vector<std::uint32_t> to(tree.nodes.size(), 0);
    // For a context below the depth cap: the cut node it went to (else kNoParent).
    // Under a cut node, one child per method, flat, so self values per method stay.
    std::vector<std::uint32_t> cutAt(tree.nodes.size(), kNoParent);
    std::uint32_t up[2 * kFoldCycle];
    for (std::uint32_t i = 1; i < tree.nodes.size(); ++i) {
        const Node &n = tree.nodes[i];
        const std::uint32_t p = to[n.parent];
        std::uint32_t target = kNoParent;
        if (cutAt[n.parent] != kNoParent) {
            cutAt[i] = cutAt[n.parent];
            target = f.Child(cutAt[i], n.frame);
            ++stats.cutContexts;
        } else {
            // up[k]: the k-th ancestor of the new node's folded parent (0: itself).
            std::size_t known = 0;
            for (std::uint32_t a = p; a != 0 && known < 2 * kFoldCycle - 1; a = f.parent[a]) up[known++] = a;
            for (std::size_t cycle = 1; cycle <= kFoldCycle && 2 * cycle - 1 <= known; ++cycle) {
                if (f.frame[up[cycle - 1]] != n.frame) continue;
                bool repeats = true;
                for (std::size_t j = 0; j + 1 < cycle && repeats; ++j) repeats = f.frame[up[j]] == f.frame[up[j + cycle]];
                if (repeats) {
                    target = up[cycle - 1];
                    ++stats.foldedContexts;
                    break;
                }
            }
            if (target == kNoParent) {
                if (f.depth[p] >= maxDepth) {
                    cutAt[i] = f.Child(p, kCutFrame);
                    target = f.Child(cutAt[i], n.frame);
                    ++stats.cutContexts;
                } else {
                    target = f.Child(p, n.frame);
                }
            }
        }
        to[i] = target;
        if (metric < n.self.size()) f.value[target] += n.self[metric];
    }
    return f;
}

}  // namespace

std::string CollapsedStats::Note() const {
    if (foldedContexts == 0 && cutContexts == 0) return "";
    std::string note = "collapsed stacks:";
    if (foldedContexts != 0) note += " recursion folded (" + std::to_string(foldedContexts) + " calling contexts merged into their first activation)";
    if (cutContexts != 0) {
        note += std::string(foldedContexts != 0 ? ";" : "") + " " + std::to_string(cutContexts) +
                " calling contexts deeper than " + std::to_string(maxDepth) +
                " frames cut to \"[deeper_frames_cut];method\" (self values per method kept)";
    }
    return note + " (the JSON profile keeps every context)";
}

CollapsedStats WriteCollapsed(const Profile &profile, std::ostream &stream, std::size_t metric, double minShare,
                              std::size_t maxDepth) {
    CollapsedStats stats;
    stats.maxDepth = maxDepth;
    if (metric >= profile.metrics.size() || profile.merged.nodes.empty()) return stats;
    const FoldedTree tree = Fold(profile.merged, metric, maxDepth, stats);
    // Totals: children come after parents, sum backwards.
    std::vector<std::uint64_t> totals(tree.value);
    for (std::size_t i = totals.size(); i-- > 1;) totals[tree.parent[i]] += totals[i];
    const double threshold = double(totals[0]) * minShare;
    // Names with ';' (separates frames) and ' ' (separates the count) replaced.
    std::vector<std::string> names(profile.frames.size());
    for (std::size_t f = 0; f < names.size(); ++f) {
        names[f] = profile.frames[f].name;
        std::replace(names[f].begin(), names[f].end(), ';', ':');
        std::replace(names[f].begin(), names[f].end(), ' ', '_');
    }
    const std::string cutName = "[deeper_frames_cut]";
    // Depth first with one path buffer: memory stays O(depth), not O(nodes x depth);
    // each line is the buffer and the value, copied into the output buffer.
    detail::TextOut out(stream);
    std::string path;
    struct Item {
        std::uint32_t node;
        std::size_t pathLength;  // the buffer's length before this node's name
    };
    std::vector<Item> work;
    for (auto it = tree.children[0].rbegin(); it != tree.children[0].rend(); ++it) work.push_back({*it, 0});
    while (!work.empty()) {
        const Item item = work.back();
        work.pop_back();
        // A subtree below the threshold cannot hold a line above it.
        if (double(totals[item.node]) < threshold || totals[item.node] == 0) continue;
        path.resize(item.pathLength);
        if (!path.empty()) path += ';';
        path += tree.frame[item.node] == kCutFrame ? cutName : names[tree.frame[item.node]];
        const std::uint64_t v = tree.value[item.node];
        if (v != 0 && double(v) >= threshold) {
            out << std::string_view(path) << ' ' << v << '\n';
            ++stats.lines;
        }
        const std::size_t length = path.size();
        const auto &children = tree.children[item.node];
        for (auto it = children.rbegin(); it != children.rend(); ++it) work.push_back({*it, length});
    }
    return stats;
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
                std::vector<std::string> &written, std::vector<std::string> &errors, std::vector<std::string> *notes) {
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
            case kCollapsed: {
                const std::string note = WriteCollapsed(profile, out, profile.defaultMetric).Note();
                if (notes != nullptr && !note.empty()) notes->push_back(note);
                break;
            }
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
