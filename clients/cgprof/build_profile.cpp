// cgprof's exact modes: the report profile from the threads' calling-context trees,
// at the end of the run or at a sample point (Profiler::Emit writes it).
#include "call_tree.h"

#include "martini/clients/frames.h"
#include "martini/clients/names.h"
#include "martini/clients/output.h"
#include "martini/clients/support.h"

#include <algorithm>
#include <utility>

using namespace Martini::MPI;
namespace report = martini::report;

namespace cgprof {
namespace {

// Builds one profile: a tree per thread, its spans, the counters summed over them.
class ProfileBuilder {
public:
    ProfileBuilder(IMpi &mpi, TId id, const Options &o, const std::unordered_map<TId, std::string> &threadNames)
        : mpi_(mpi), id_(id), o_(o), threadNames_(threadNames) {}

    report::Profile Build(std::vector<TreeCopy> &trees) {
        AddMetrics();
        for (TreeCopy &t : trees) AddThread(t);
        report::NameOverloads(p_.frames);
        p_.NameThreads();
        p_.Merge();
        p_.counters = {{"calling_contexts", contexts_},
                       {"calls_beyond_node_budget", beyondCalls_},
                       {"depth_overflows", depthOverflows_},
                       {"leaves_without_enter", unmatched_},
                       {"calls_closed_after_pause", unclosed_},
                       {"calls_open_at_exit", stillOpen_},
                       {"exception_exits", exceptionExits_},
                       {"trace_slices", p_.spans.size()},
                       {report::kTraceCallsNotKept, notTraced_}};
        return std::move(p_);
    }

private:
    void AddMetrics() {
        p_.tool = "cgprof";
        p_.mode = o_.time ? "time" : "counts";
        p_.runtime = martini::clients::RuntimeName(mpi_, id_);
        p_.metrics.push_back({"calls", "count"});
        if (o_.time) p_.metrics.push_back({"wall", "nanoseconds"});
        if (o_.cpu) p_.metrics.push_back({"cpu", "nanoseconds"});
        p_.defaultMetric = o_.time ? 1 : 0;
        m_ = p_.metrics.size();
    }

    // One thread: its tree (when it has calls), its spans and its counters.
    void AddThread(TreeCopy &t) {
        // Calls still running (threads the runtime did not end, or at a sample point):
        // closed at the thread's last event, so what they did is kept.
        stillOpen_ += t.stack.size();
        while (!t.stack.empty()) Close(t, t.lastWall, t.lastCpu);
        depthOverflows_ += t.depthOverflows;
        unmatched_ += t.unmatchedLeaves;
        unclosed_ += t.unclosedByPause;
        exceptionExits_ += t.exceptionExits;
        report::Tree tree;
        tree.threadId = t.threadId;
        if (auto it = threadNames_.find(t.threadId); it != threadNames_.end()) tree.threadName = it->second;
        else tree.threadName = martini::clients::GetThreadName(mpi_, id_, t.threadId);
        tree.Clear(m_);
        AddCalls(tree, t);
        AddBeyondBudget(tree, t);
        contexts_ += t.nodes.size() - 1;
        beyondCalls_ += t.callsBeyondBudget;
        notTraced_ += t.callsNotTraced;
        if (tree.nodes.size() > 1) p_.threads.push_back(std::move(tree));
        for (const SpanRecord &s : t.spans) p_.spans.push_back({t.threadId, Frame(s.method), s.start, s.duration, "call"});
    }

    // The calling contexts, with their exclusive values.
    void AddCalls(report::Tree &tree, const TreeCopy &t) {
        std::vector<std::uint32_t> to(t.nodes.size(), 0);
        for (std::uint32_t i = 1; i < t.nodes.size(); ++i) {
            const CallNode &n = t.nodes[i];
            to[i] = tree.Add(to[n.parent], Frame(n.method), m_);
            tree.nodes[to[i]].callLine = n.callLine;
            // Exclusive = inclusive minus the children's inclusive (never negative).
            std::uint64_t childWall = n.detachedWall, childCpu = n.detachedCpu;
            for (std::uint32_t c = n.firstChild; c != kNone; c = t.nodes[c].nextSibling) {
                childWall += t.nodes[c].wallNs;
                childCpu += t.nodes[c].cpuNs;
            }
            auto &self = tree.nodes[to[i]].self;
            self[0] = n.calls;
            if (o_.time) self[1] = n.wallNs > childWall ? n.wallNs - childWall : 0;
            if (o_.cpu) self[2] = n.cpuNs > childCpu ? n.cpuNs - childCpu : 0;
        }
    }

    // Calls beyond the node budget, one leaf per method under one marker.
    void AddBeyondBudget(report::Tree &tree, const TreeCopy &t) {
        if (t.beyond.empty()) return;
        const std::uint32_t marker = tree.Add(0, MarkerFrame(), m_);
        std::vector<std::pair<TId, BeyondBudget>> rows(t.beyond.begin(), t.beyond.end());
        std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
        for (const auto &[method, b] : rows) {
            auto &self = tree.nodes[tree.Add(marker, Frame(method), m_)].self;
            self[0] = b.calls;
            if (o_.time) self[1] = b.selfWall;
            if (o_.cpu) self[2] = b.selfCpu;
        }
    }

    std::uint32_t Frame(TId method) {
        auto [it, added] = frameOf_.emplace(method, static_cast<std::uint32_t>(p_.frames.size()));
        if (added) {
            p_.frames.push_back(martini::clients::MethodFrame(mpi_, id_, method));
        }
        return it->second;
    }

    // The frame under which calls beyond the node budget are kept.
    std::uint32_t MarkerFrame() {
        if (markerFrame_ == kNone) {
            markerFrame_ = static_cast<std::uint32_t>(p_.frames.size());
            report::Frame f;
            f.name = "(more call paths: nodes=" + std::to_string(o_.nodes) + " reached)";
            p_.frames.push_back(f);
        }
        return markerFrame_;
    }

    IMpi &mpi_;
    TId id_;
    const Options &o_;
    const std::unordered_map<TId, std::string> &threadNames_;
    report::Profile p_;
    std::size_t m_ = 0;  // metrics
    std::unordered_map<TId, std::uint32_t> frameOf_;
    std::uint32_t markerFrame_ = kNone;
    std::uint64_t depthOverflows_ = 0, unmatched_ = 0, unclosed_ = 0, exceptionExits_ = 0, stillOpen_ = 0;
    std::uint64_t contexts_ = 0, beyondCalls_ = 0, notTraced_ = 0;
};

}  // namespace

std::optional<report::TableThreads> TableOfWorkingThreads(const report::Profile &p,
                                                          const std::unordered_map<TId, std::uint64_t> &threadCpu,
                                                          const std::string &where) {
    const int wall = p.MetricIndex("wall");
    std::uint64_t busiest = 0;
    for (const report::Tree &t : p.threads) {
        if (auto it = threadCpu.find(t.threadId); it != threadCpu.end()) busiest = std::max(busiest, it->second);
    }
    report::TableThreads shown;
    std::vector<std::string> waited;
    for (const report::Tree &t : p.threads) {
        std::uint64_t wallInCalls = 0;  // what the thread adds to the table
        for (const report::Node &n : t.nodes) {
            if (wall >= 0 && std::size_t(wall) < n.self.size()) wallInCalls += n.self[wall];
        }
        const auto it = threadCpu.find(t.threadId);
        const bool mostlyWaited = wall >= 0 && it != threadCpu.end() &&
                                  double(it->second) < kWaitedShare * double(wallInCalls) &&
                                  double(it->second) < kBusiestShare * double(busiest);
        if (mostlyWaited) waited.push_back(t.threadName);
        else shown.ids.push_back(t.threadId);
    }
    if (waited.empty()) return std::nullopt;
    shown.what = "those that used CPU";
    const bool one = waited.size() == 1;
    shown.note = "left out: " + std::to_string(waited.size()) + (one ? " thread" : " threads") +
                 " that mostly waited (on CPU under " + std::to_string(int(kWaitedShare * 100)) + "% of " +
                 (one ? "its" : "their") + " time in calls): ";
    constexpr std::size_t kNamed = 5;
    for (std::size_t i = 0; i < waited.size() && i < kNamed; ++i) shown.note.append(i == 0 ? "" : ", ").append(waited[i]);
    if (waited.size() > kNamed) shown.note.append(" and ").append(std::to_string(waited.size() - kNamed)).append(" more");
    if (!where.empty()) shown.note.append("; ").append(where);
    return shown;
}

std::string WhereEveryThreadIs(const martini::clients::OutputOptions &out, const std::string &dir) {
    const bool json = (out.formats & report::kJson) != 0, html = (out.formats & report::kHtml) != 0;
    if (dir.empty() || (!json && !html)) return "the profile's files show every thread (out=DIR, formats=json+html)";
    std::string prefix = dir;
    if (prefix.back() != '/') prefix.push_back('/');
    const std::string base = martini::clients::ExpandOutputName(out.name);
    std::string where;
    if (json) {
        where.append("martini report ").append(prefix).append(report::FileName(base, report::kJson));
        where.append(" --thread NAME");
    }
    if (json && html) where.append(", or ");
    if (html) where.append(prefix).append(report::FileName(base, report::kHtml));
    return where.append(json && html ? ", shows every thread" : json ? " shows any thread" : " shows every thread");
}

report::Profile BuildProfile(std::vector<TreeCopy> &trees, const Options &o, IMpi &mpi, TId id,
                             const std::unordered_map<TId, std::string> &threadNames) {
    return ProfileBuilder(mpi, id, o, threadNames).Build(trees);
}

}  // namespace cgprof
