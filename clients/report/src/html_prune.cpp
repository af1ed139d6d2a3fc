// The HTML report's pruning (profile.h: HtmlOptions, docs/formats.md#html-report): a
// profile of millions of calling contexts becomes a page of at most the node budget's,
// the contexts too narrow to see merged into one "(N pruned)" node per parent.
//
// A context's importance is the largest share of its tree's total it holds in any
// metric. Importance never grows from a parent to its children, so keeping every
// context at or above one share keeps whole trees from their roots down.
#include "html_prune.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

namespace martini::report::detail {
namespace {

using nlohmann::json;

constexpr std::uint32_t kPrunedFrame = 0xfffffffeu;  // until the frames are renumbered
constexpr std::size_t kTopRows = 50;                 // rows per metric and order the page may show

// Inclusive values, node-major: totals[node * metrics + k].
std::vector<std::uint64_t> FlatTotals(const Tree &tree, std::size_t metrics) {
    std::vector<std::uint64_t> totals(tree.nodes.size() * metrics, 0);
    for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
        const Node &n = tree.nodes[i];
        for (std::size_t k = 0; k < metrics && k < n.self.size(); ++k) totals[i * metrics + k] = n.self[k];
    }
    for (std::size_t i = tree.nodes.size(); i-- > 1;) {
        const std::uint32_t p = tree.nodes[i].parent;
        for (std::size_t k = 0; k < metrics; ++k) totals[p * metrics + k] += totals[i * metrics + k];
    }
    return totals;
}

// Each node's largest share of the tree's total in any metric; the root's is 2.
std::vector<float> Importance(const Tree &tree, std::size_t metrics) {
    const auto totals = FlatTotals(tree, metrics);
    std::vector<float> share(tree.nodes.size(), 0.0f);
    if (share.empty()) return share;
    share[0] = 2.0f;
    for (std::size_t i = 1; i < share.size(); ++i) {
        double best = 0;
        for (std::size_t k = 0; k < metrics; ++k) {
            if (totals[k] != 0) best = std::max(best, double(totals[i * metrics + k]) / double(totals[k]));
        }
        share[i] = float(best);
    }
    return share;
}

// Per frame: self and outermost-activation totals for every metric (as TopFrames).
struct FrameStats {
    std::vector<std::uint64_t> self, total;  // frame * metrics + k
    std::vector<bool> used;
    std::uint64_t methods = 0;
};

FrameStats PerFrame(const Tree &tree, const std::vector<std::uint64_t> &totals, std::size_t metrics, std::size_t frames) {
    FrameStats s;
    s.self.assign(frames * metrics, 0);
    s.total.assign(frames * metrics, 0);
    s.used.assign(frames, false);
    std::vector<std::uint32_t> onPath(frames, 0);
    std::vector<std::int64_t> work{0};  // ~node: leaving it
    while (!work.empty()) {
        const std::int64_t item = work.back();
        work.pop_back();
        if (item < 0) {
            --onPath[tree.nodes[std::size_t(~item)].frame];
            continue;
        }
        const Node &n = tree.nodes[std::size_t(item)];
        if (n.frame < frames) {
            if (!s.used[n.frame]) ++s.methods;
            s.used[n.frame] = true;
            for (std::size_t k = 0; k < metrics && k < n.self.size(); ++k) {
                s.self[n.frame * metrics + k] += n.self[k];
                if (onPath[n.frame] == 0) s.total[n.frame * metrics + k] += totals[std::size_t(item) * metrics + k];
            }
            ++onPath[n.frame];
            work.push_back(~item);
        }
        for (std::uint32_t c : n.children) work.push_back(c);
    }
    return s;
}

// The frames among the first kTopRows by self or by total of any metric.
std::vector<std::uint32_t> TopRowFrames(const FrameStats &s, std::size_t metrics) {
    std::vector<std::uint32_t> used;
    for (std::uint32_t f = 0; f < s.used.size(); ++f) {
        if (s.used[f]) used.push_back(f);
    }
    std::vector<bool> chosen(s.used.size(), false);
    for (const auto *values : {&s.self, &s.total}) {
        for (std::size_t k = 0; k < metrics; ++k) {
            auto by = [&](std::uint32_t a, std::uint32_t b) {
                return (*values)[a * metrics + k] != (*values)[b * metrics + k] ? (*values)[a * metrics + k] > (*values)[b * metrics + k] : a < b;
            };
            const std::size_t n = std::min(kTopRows, used.size());
            std::partial_sort(used.begin(), used.begin() + std::ptrdiff_t(n), used.end(), by);
            for (std::size_t i = 0; i < n; ++i) chosen[used[i]] = true;
        }
    }
    std::vector<std::uint32_t> out;
    for (std::uint32_t f = 0; f < chosen.size(); ++f) {
        if (chosen[f]) out.push_back(f);
    }
    return out;
}

// One tree's share of the page: its pruned copy, its "(N pruned)" nodes and, when
// something was pruned, the exact top rows.
struct PrunedTree {
    Tree tree;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> pruned;  // node in `tree`, contexts merged there
    std::vector<std::uint32_t> topFrames;                         // old frame indexes
    FrameStats stats;
};

// Keeps the contexts above `share`, and those at it while `ties` lasts.
PrunedTree Prune(const Tree &in, const std::vector<float> &importance, float share, std::size_t &ties,
                 std::size_t metrics, std::size_t frames) {
    PrunedTree out;
    out.tree.threadId = in.threadId;
    out.tree.threadName = in.threadName;
    out.tree.Clear(metrics);
    if (in.nodes.empty()) return out;
    const auto totals = FlatTotals(in, metrics);
    std::vector<std::uint32_t> to(in.nodes.size(), kNoParent);  // kept: its new index
    std::vector<std::uint32_t> owner(in.nodes.size(), 0);       // pruned: its kept ancestor
    struct Merged {
        std::vector<std::uint64_t> values;
        std::uint64_t contexts = 0;
    };
    std::map<std::uint32_t, Merged> merged;  // by kept parent, in tree order
    to[0] = 0;
    for (std::uint32_t i = 1; i < in.nodes.size(); ++i) {
        const Node &n = in.nodes[i];
        if (to[n.parent] != kNoParent && (importance[i] > share || (importance[i] == share && ties > 0))) {
            if (importance[i] == share) --ties;
            to[i] = out.tree.Add(to[n.parent], n.frame, metrics);
            out.tree.nodes[to[i]].self = n.self;
            out.tree.nodes[to[i]].self.resize(metrics, 0);
            out.tree.nodes[to[i]].selfLines = n.selfLines;
            continue;
        }
        owner[i] = to[n.parent] != kNoParent ? n.parent : owner[n.parent];
        Merged &m = merged[owner[i]];
        m.values.resize(metrics, 0);
        ++m.contexts;
        if (owner[i] == n.parent) {
            for (std::size_t k = 0; k < metrics; ++k) m.values[k] += totals[i * metrics + k];
        }
    }
    for (const auto &[parent, m] : merged) {
        const std::uint32_t node = out.tree.Add(to[parent], kPrunedFrame, metrics);
        out.tree.nodes[node].self = m.values;
        out.pruned.emplace_back(node, m.contexts);
    }
    if (!out.pruned.empty()) {
        out.stats = PerFrame(in, totals, metrics, frames);
        out.topFrames = TopRowFrames(out.stats, metrics);
    }
    return out;
}

// The page's note and per-tree data (docs/formats.md#html-report).
json TreeExtra(const PrunedTree &t, const std::vector<std::uint32_t> &frameTo, std::size_t metrics) {
    json j = json::object();
    if (t.pruned.empty()) return j;
    json pruned = json::array();
    for (const auto &[node, contexts] : t.pruned) pruned.push_back({node, contexts});
    json tops = json::array();
    for (std::uint32_t f : t.topFrames) {
        json row = json::array({frameTo[f]});
        for (std::size_t k = 0; k < metrics; ++k) row.push_back(t.stats.self[f * metrics + k]);
        for (std::size_t k = 0; k < metrics; ++k) row.push_back(t.stats.total[f * metrics + k]);
        tops.push_back(std::move(row));
    }
    j["pruned"] = std::move(pruned);
    j["methods"] = t.stats.methods;
    j["tops"] = std::move(tops);
    return j;
}

// Renumbers the frames to those the pruned trees and their top rows use (the
// "(pruned)" frame last) and writes the page's data.
void Finish(const Profile &in, std::vector<PrunedTree> &trees, HtmlProfile &out) {
    std::vector<std::uint32_t> frameTo(in.frames.size(), kNoParent);
    auto use = [&](std::uint32_t f) {
        if (f < frameTo.size() && frameTo[f] == kNoParent) {
            frameTo[f] = std::uint32_t(out.profile.frames.size());
            out.profile.frames.push_back(in.frames[f]);
        }
    };
    for (const PrunedTree &t : trees) {
        for (const Node &n : t.tree.nodes) use(n.frame);
        for (std::uint32_t f : t.topFrames) use(f);
    }
    const auto prunedFrame = std::uint32_t(out.profile.frames.size());
    out.profile.frames.push_back(Frame{"(pruned)", "", "", "", "", 0});
    json extras = json::array();
    for (PrunedTree &t : trees) {
        for (Node &n : t.tree.nodes) {
            if (n.frame == kPrunedFrame) n.frame = prunedFrame;
            else if (n.frame < frameTo.size()) n.frame = frameTo[n.frame];
        }
        extras.push_back(TreeExtra(t, frameTo, in.metrics.size()));
    }
    out.profile.merged = std::move(trees[0].tree);
    for (std::size_t i = 1; i < trees.size(); ++i) out.profile.threads.push_back(std::move(trees[i].tree));
    out.extra = {{"contexts", out.stats.contexts}, {"pruned", out.stats.prunedContexts},
                 {"share", out.stats.share},       {"prunedFrame", prunedFrame},
                 {"trees", std::move(extras)}};
}

}  // namespace

bool PruneForHtml(const Profile &profile, const HtmlOptions &options, HtmlProfile &out) {
    std::vector<const Tree *> trees{&profile.merged};
    for (const Tree &t : profile.threads) trees.push_back(&t);
    out.stats = HtmlStats{};
    for (const Tree *t : trees) out.stats.contexts += t->nodes.empty() ? 0 : t->nodes.size() - 1;
    if (out.stats.contexts <= options.nodeBudget) return false;
    const std::size_t metrics = profile.metrics.size();
    std::vector<std::vector<float>> importance;
    std::vector<float> candidates;
    for (const Tree *t : trees) {
        importance.push_back(Importance(*t, metrics));
        for (std::size_t i = 1; i < importance.back().size(); ++i) {
            if (importance.back()[i] >= options.minShare) candidates.push_back(importance.back()[i]);
        }
    }
    // The budget-th largest share, when more contexts reach the least one; those above
    // it are kept, those at it while the budget lasts.
    auto share = float(options.minShare);
    if (candidates.size() > options.nodeBudget && options.nodeBudget == 0) {
        share = 2.0f;  // the roots' only
    } else if (candidates.size() > options.nodeBudget) {
        const auto nth = candidates.begin() + std::ptrdiff_t(options.nodeBudget - 1);
        std::nth_element(candidates.begin(), nth, candidates.end(), std::greater<float>());
        share = *nth;
    }
    const auto above = std::size_t(std::count_if(candidates.begin(), candidates.end(), [&](float s) { return s > share; }));
    std::size_t ties = options.nodeBudget > above ? options.nodeBudget - above : 0;
    std::vector<PrunedTree> pruned;
    std::uint64_t kept = 0;
    for (std::size_t i = 0; i < trees.size(); ++i) {
        pruned.push_back(Prune(*trees[i], importance[i], share, ties, metrics, profile.frames.size()));
        kept += pruned.back().tree.nodes.size() - 1 - pruned.back().pruned.size();
    }
    out.stats.prunedContexts = out.stats.contexts - kept;
    out.stats.share = share;
    Profile &p = out.profile;
    p = Profile{};
    p.tool = profile.tool;
    p.runtime = profile.runtime;
    p.mode = profile.mode;
    p.metrics = profile.metrics;
    p.defaultMetric = profile.defaultMetric;
    p.periodNs = profile.periodNs;
    p.counters = profile.counters;
    p.threadNames = profile.threadNames;
    Finish(profile, pruned, out);
    return true;
}

}  // namespace martini::report::detail

namespace martini::report {

std::string HtmlStats::Note() const {
    if (prunedContexts == 0) return "";
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.3g%%", share * 100.0);
    return "html report: " + std::to_string(prunedContexts) + " of " + std::to_string(contexts) +
           " calling contexts pruned (each under " + percent +
           " of its tree's total in every metric, merged into \"(N pruned)\" nodes, values kept; the JSON profile keeps "
           "every context)";
}

}  // namespace martini::report
