// cgprof's exact modes: what a thread's calling-context tree is made of, shared by
// the event path (cgprof.cpp) and the profile built from the trees at the end of the
// run or at a sample point (build_profile.cpp).
#pragma once

#include <MpiAPI.h>

#include "martini/report/profile.h"
#include "options.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace cgprof {

using Martini::MPI::TId;

inline constexpr std::uint32_t kNone = 0xffffffffu;
inline constexpr std::uint64_t kCpuUnknown = ~std::uint64_t{0};  // a thread's CPU time the runtime did not tell

struct CallNode {
    TId method = 0;
    std::uint32_t parent = kNone;
    std::uint32_t firstChild = kNone;
    std::uint32_t nextSibling = kNone;
    std::uint32_t childCount = 0;
    std::uint32_t callLine = 0;  // the call site in the parent's method (`lines`), 0 when unknown
    std::uint64_t calls = 0;
    std::uint64_t wallNs = 0;  // inclusive
    std::uint64_t cpuNs = 0;   // inclusive
    std::uint64_t exceptionExits = 0;
    std::uint64_t detachedWall = 0, detachedCpu = 0;  // callees kept beyond the node budget
};

// Calls beyond the node budget, per method: exact calls and self time.
struct BeyondBudget {
    std::uint64_t calls = 0, selfWall = 0, selfCpu = 0;
};

// A call in progress. `node` is kNone for a call on a path beyond the node budget:
// it is kept per method (ThreadTree::beyond), its callees' time in `childWall`.
struct OpenCall {
    std::uint32_t node;
    TId method;
    BeyondBudget *beyond;  // when node is kNone
    std::uint64_t wallStart;
    std::uint64_t cpuStart;
    std::uint64_t excludedAtEnter;
    bool traced;  // entered within the trace budget: becomes a slice when it ends
    std::uint64_t childWall = 0, childCpu = 0;
};

struct SpanRecord {
    TId method;
    std::uint64_t start, duration;
};

// What a profile is built from: one thread's tree as it was at the end of the run or
// at a sample point (Profiler::Take), its open calls then closed at its last event.
struct TreeCopy {
    TId threadId = 0;
    std::vector<CallNode> nodes;
    std::vector<OpenCall> stack;
    std::unordered_map<TId, BeyondBudget> beyond;
    std::vector<SpanRecord> spans;
    std::uint64_t lastWall = 0, lastCpu = 0, excludedNs = 0;
    std::uint64_t depthOverflows = 0, unmatchedLeaves = 0, unclosedByPause = 0, exceptionExits = 0;
    std::uint64_t callsBeyondBudget = 0, callsNotTraced = 0;
};

// Ends the innermost open call of `t` (a ThreadTree or a TreeCopy) at `wall` and
// `cpu`: its time goes to its node, or past the node budget to its method.
template <class Tree>
void Close(Tree &t, std::uint64_t wall, std::uint64_t cpu) {
    const OpenCall call = t.stack.back();
    t.stack.pop_back();
    const std::uint64_t excluded = t.excludedNs - call.excludedAtEnter;
    const std::uint64_t elapsed = wall > call.wallStart ? wall - call.wallStart : 0;
    const std::uint64_t charged = elapsed > excluded ? elapsed - excluded : 0;
    const std::uint64_t cpuCharged = cpu > call.cpuStart ? cpu - call.cpuStart : 0;
    if (call.node != kNone) {
        CallNode &n = t.nodes[call.node];
        n.wallNs += charged;
        n.cpuNs += cpuCharged;
    } else {
        // Beyond the node budget: self time per method; the caller does not count
        // it as its own.
        BeyondBudget &b = *call.beyond;
        b.selfWall += charged > call.childWall ? charged - call.childWall : 0;
        b.selfCpu += cpuCharged > call.childCpu ? cpuCharged - call.childCpu : 0;
        if (!t.stack.empty() && t.stack.back().node != kNone) {
            CallNode &caller = t.nodes[t.stack.back().node];
            caller.detachedWall += charged;
            caller.detachedCpu += cpuCharged;
        }
    }
    if (!t.stack.empty() && t.stack.back().node == kNone) {
        t.stack.back().childWall += charged;
        t.stack.back().childCpu += cpuCharged;
    }
    if (call.traced) t.spans.push_back({call.method, call.wallStart, charged});
}

// The profile of the trees (their open calls closed first), with its counters.
// `threadNames`: names from ThreadStart; other threads are named through the runtime.
martini::report::Profile BuildProfile(std::vector<TreeCopy> &trees, const Options &o, Martini::MPI::IMpi &mpi,
                                      TId id, const std::unordered_map<TId, std::string> &threadNames);

// ---- The table at the end of the run (time mode) ------------------------------------

// A thread mostly waited when the CPU time it used from its first event to its end is
// under kWaitedShare of its wall time in calls (what it adds to the table) and under
// kBusiestShare of the busiest thread's CPU time (so the busiest always stays, and so
// does a thread that did much work between long waits).
inline constexpr double kWaitedShare = 0.05;
inline constexpr double kBusiestShare = 0.10;

// The threads of the table: those of `p` that did not mostly wait, given `threadCpu`
// (CPU time per thread id; a thread not in it stays). std::nullopt when no thread is
// left out (the table is over all threads, as without CPU times). `where`: where every
// thread is shown (WhereEveryThreadIs), for the line under the table's header.
std::optional<martini::report::TableThreads> TableOfWorkingThreads(
    const martini::report::Profile &p, const std::unordered_map<TId, std::uint64_t> &threadCpu,
    const std::string &where);

// "martini report DIR/cgprof.json --thread NAME, or DIR/cgprof.html, shows every
// thread", from the files the run writes (`dir`: the resolved output directory).
std::string WhereEveryThreadIs(const martini::clients::OutputOptions &out, const std::string &dir);

}  // namespace cgprof
