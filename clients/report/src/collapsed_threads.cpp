// Collapsed stacks per thread (views.h): each thread's tree under a frame named after
// the thread, written as WriteCollapsed writes the merged tree.
#include "martini/report/views.h"

#include <map>
#include <ostream>

namespace martini::report {

namespace {

// What each thread's root frame is called: its name, with " (id N)" when another
// thread has the same name (as the HTML report's thread list).
std::vector<std::string> ThreadLabels(const Profile &profile) {
    std::map<std::string, int> seen;
    for (const Tree &t : profile.threads) ++seen[profile.ThreadName(t.threadId)];
    std::vector<std::string> labels;
    for (const Tree &t : profile.threads) {
        std::string label = profile.ThreadName(t.threadId);
        if (seen[label] > 1) label.append(" (id ").append(std::to_string(t.threadId)).append(")");
        labels.push_back(std::move(label));
    }
    return labels;
}

}  // namespace

CollapsedStats WriteCollapsedPerThread(const Profile &profile, std::ostream &out, std::size_t metric, double minShare,
                                       std::size_t maxDepth) {
    if (metric >= profile.metrics.size()) return CollapsedStats{};
    // One profile of one metric whose merged tree has a child per thread, each over a
    // copy of that thread's tree.
    Profile byThread;
    byThread.metrics = {profile.metrics[metric]};
    byThread.frames = profile.frames;
    byThread.merged.Clear(1);
    const std::vector<std::string> labels = ThreadLabels(profile);
    for (std::size_t t = 0; t < profile.threads.size(); ++t) {
        const Tree &tree = profile.threads[t];
        const auto threadFrame = std::uint32_t(byThread.frames.size());
        byThread.frames.push_back(Frame{labels[t], "", "", "", "", 0});
        std::vector<std::uint32_t> to(tree.nodes.size(), 0);
        for (std::uint32_t i = 0; i < tree.nodes.size(); ++i) {
            const Node &n = tree.nodes[i];
            to[i] = byThread.merged.Add(n.parent == kNoParent ? 0 : to[n.parent], n.parent == kNoParent ? threadFrame : n.frame, 1);
            byThread.merged.nodes[to[i]].self[0] = metric < n.self.size() ? n.self[metric] : 0;
        }
    }
    // The thread's frame is one more level: the depth cap stays on the methods.
    CollapsedStats stats = WriteCollapsed(byThread, out, 0, minShare, maxDepth + 1);
    stats.maxDepth = maxDepth;
    return stats;
}

}  // namespace martini::report
