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

}  // namespace martini::report
