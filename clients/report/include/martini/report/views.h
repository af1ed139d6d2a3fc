// More views of a profile (docs/formats.md): the HTML report of large profiles,
// collapsed stacks per thread, and the comparison of two profiles (`martini diff`).
#pragma once

#include "martini/report/profile.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace martini::report {

// ---- The HTML report of a large profile ---------------------------------------------

// What the HTML report leaves out of a large profile (it stays light to open: the
// JSON keeps everything). When the trees (merged and per thread) hold more than
// `nodeBudget` calling contexts in all, each context whose total is under `minShare`
// of its tree's total in every metric is merged, with its subtree, into one
// "(N pruned)" node under its parent (values kept, so totals stay exact); the share
// is raised until at most `nodeBudget` contexts remain. The top table of a pruned
// tree is computed from the whole tree. The page says what was pruned.
// WriteHtml(profile, out) uses these defaults.
inline constexpr std::size_t kHtmlNodeBudget = 50000;
inline constexpr double kHtmlMinShare = 1e-4;
struct HtmlOptions {
    std::size_t nodeBudget = kHtmlNodeBudget;
    double minShare = kHtmlMinShare;
    // A differential flame graph (WriteDiffHtml): what the page says it compares.
    struct Diff {
        std::string metric;  // "" for an ordinary report
        std::string base, now;
    } diff;
};
struct HtmlStats {
    std::uint64_t contexts = 0;        // calling contexts in all trees (roots not counted)
    std::uint64_t prunedContexts = 0;  // merged into "(N pruned)" nodes
    double share = 0;                  // the share contexts were pruned under (0: none)
    // One line for the terminal when something was pruned, else "".
    std::string Note() const;
};
HtmlStats WriteHtml(const Profile &profile, std::ostream &out, const HtmlOptions &options);

// ---- Collapsed stacks per thread --------------------------------------------------

// WriteCollapsed over the threads' own trees instead of the merged one, each line
// starting with its thread's frame: "main;a;b 12" (the thread's name, with " (id N)"
// when several threads share it; ';' and ' ' replaced as in any frame, so
// "main;...", "worker-1;...", "thread_6;..."). `minShare` is of all threads' total;
// recursion is folded and paths cut below `maxDepth` methods as WriteCollapsed does.
CollapsedStats WriteCollapsedPerThread(const Profile &profile, std::ostream &out, std::size_t metric,
                                       double minShare = kCollapsedMinShare,
                                       std::size_t maxDepth = kCollapsedMaxDepth);

// ---- Comparing two profiles (martini diff) ----------------------------------------

// The metric two profiles are compared by: `name`, or when it is "" the new
// profile's wall time when measured, else its default metric. Returns "" and sets
// both indexes, or why they cannot be compared ("no metric 'wall' in the base
// profile; it has alloc_objects, alloc_space"; units that differ).
std::string DiffMetric(const Profile &base, const Profile &now, const std::string &name, std::size_t &baseMetric,
                       std::size_t &newMetric);

// One method's self value of the metric in each profile (all threads merged), by
// name: a method in one profile only has 0 in the other.
struct DiffRow {
    std::string method;
    std::uint64_t base = 0, now = 0;
};
// Every method, the largest change (either way) first, then by name.
std::vector<DiffRow> DiffMethods(const Profile &base, const Profile &now, std::size_t baseMetric, std::size_t newMetric);

// The table `martini diff` prints: a header with both wholes and their change, then
// method, base, new, delta and ratio (new / base) for the first `topN` rows, in the
// metric's unit.
void WriteDiffTable(const Profile &base, const Profile &now, std::size_t baseMetric, std::size_t newMetric,
                    std::ostream &out, std::size_t topN);

// The merged trees of both profiles merged by call path (frames matched by name) into
// one tree with two metrics, "new" and "base" (the compared metric's unit), what the
// differential flame graph draws. No per-thread trees (threads differ between runs).
Profile DiffProfile(const Profile &base, const Profile &now, std::size_t baseMetric, std::size_t newMetric);

// The differential flame graph: the HTML report of DiffProfile, widths from the new
// profile (or the base), each frame coloured by the change of its total or self
// value (red slower, blue faster), both values and the change on hover, the top table
// by change. `baseName` and `newName` are what the page calls them (file names).
HtmlStats WriteDiffHtml(const Profile &base, const Profile &now, std::size_t baseMetric, std::size_t newMetric,
                        const std::string &baseName, const std::string &newName, std::ostream &out);

}  // namespace martini::report
