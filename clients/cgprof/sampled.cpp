// cgprof's sample mode: a calling-context tree per runtime thread from SampleHit
// stacks (innermost first). Each node counts the samples whose innermost frame is
// its path (self); totals are the sums over subtrees, as in the exact modes. Time is
// estimated: samples x the sampling period, per path and thread, in CPU time (the
// default) or wall-clock time (`wall`).
//
// SampleHit comes on whatever thread the runtime delivers it (the JVM: its sampler
// thread), at most kMaxSamplingHz per runtime thread: one mutex guards the trees.
#include "sampled.h"

#include "martini/clients/control.h"
#include "martini/clients/frames.h"
#include "martini/clients/names.h"
#include "martini/clients/support.h"
#include "martini/report/profile.h"

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

using namespace Martini::MPI;
namespace report = martini::report;

namespace cgprof {
namespace {

constexpr std::uint32_t kNone = 0xffffffffu;
// Frames that are no method (ids no runtime gives: ids are counted up from 1).
constexpr TId kNotWalkable = ~TId{0};
constexpr TId kCut = ~TId{0} - 1;
constexpr TId kBeyond = ~TId{0} - 2;

// The children of every node of a tree by (parent, method): open addressing with
// linear probes in one array, so that a lookup is about one cache miss (the sampler
// thread's top cost was std::unordered_map's node chase here). Child 0 marks a free
// slot: the root is nobody's child.
class ChildIndex {
public:
    std::uint32_t Find(std::uint32_t parent, TId method) const {
        if (slots_.empty()) return kNone;
        for (std::size_t i = Home(parent, method);; i = (i + 1) & (slots_.size() - 1)) {
            const Slot &s = slots_[i];
            if (s.child == 0) return kNone;
            if (s.parent == parent && s.method == method) return s.child;
        }
    }
    void Add(std::uint32_t parent, TId method, std::uint32_t child) {
        if ((used_ + 1) * 2 > slots_.size()) Grow();
        Place({method, parent, child});
        ++used_;
    }

private:
    struct Slot {
        TId method;
        std::uint32_t parent, child;
    };
    std::size_t Home(std::uint32_t parent, TId method) const {
        const std::uint64_t h = (method ^ (std::uint64_t{parent} << 32 | parent)) * 0x9E3779B97F4A7C15ull;
        return static_cast<std::size_t>(h >> 32) & (slots_.size() - 1);
    }
    void Place(const Slot &slot) {
        std::size_t i = Home(slot.parent, slot.method);
        while (slots_[i].child != 0) i = (i + 1) & (slots_.size() - 1);
        slots_[i] = slot;
    }
    void Grow() {
        std::vector<Slot> old(std::max<std::size_t>(64, slots_.size() * 2), Slot{0, 0, 0});
        old.swap(slots_);
        for (const Slot &s : old) {
            if (s.child != 0) Place(s);
        }
    }
    std::vector<Slot> slots_;  // a power of two, at most half full
    std::size_t used_ = 0;
};

struct SampleNode {
    TId method = 0;
    std::uint32_t parent = kNone;
    std::uint64_t self = 0;  // samples whose innermost frame is this path
    std::uint32_t callLine = 0;  // the call site in the parent's method, 0 when unknown
    // The lines of the method at which the self samples fell: (line, samples), by line.
    std::vector<std::pair<std::uint32_t, std::uint64_t>> lines;

    void AddLine(std::uint32_t line) {
        auto it = std::lower_bound(lines.begin(), lines.end(), line, [](const auto &l, std::uint32_t v) { return l.first < v; });
        if (it != lines.end() && it->first == line) ++it->second;
        else lines.insert(it, {line, 1});
    }
};

// A sample's time and where it was counted (the timeline).
struct Stamp {
    std::uint64_t timeNs;
    TId threadId;
    std::uint32_t node;
    std::uint32_t line;
};

struct SampleTree {
    TId threadId = 0;
    std::vector<SampleNode> nodes{SampleNode{}};  // nodes[0]: the root
    ChildIndex children;
    std::uint64_t samples = 0;
    // The previous sample's nodes from `pathStart` down: a sample shares most of its
    // frames from the root with the one before, which are then found without a lookup.
    std::vector<std::uint32_t> path;
    std::uint32_t pathStart = kNone;
    // The child of `parent` for `method`, made while the tree holds fewer than
    // `budget` nodes; kNone past it.
    std::uint32_t Child(std::uint32_t parent, TId method, std::size_t budget) {
        if (const std::uint32_t found = children.Find(parent, method); found != kNone) return found;
        if (nodes.size() >= budget) return kNone;
        const auto index = static_cast<std::uint32_t>(nodes.size());
        nodes.push_back({method, parent, 0, 0, {}});
        children.Add(parent, method, index);
        return index;
    }
};

class SampledProfiler {
public:
    SampledProfiler(IMpi &mpi, TId id, SampledOptions o) : mpi_(mpi), id_(id), o_(std::move(o)), paused_(o_.paused) {}

    const SampledOptions &options() const { return o_; }

    void Sample(const SSampleHitEventData &d) {
        if (!(d.validData & DR_THREAD_ID)) return;
        std::lock_guard lock(mutex_);
        if (paused_ || pausedThreads_.count(d.threadId) != 0) return;
        auto &slot = trees_[d.threadId];
        if (!slot) {
            slot = std::make_unique<SampleTree>();
            slot->threadId = d.threadId;
        }
        SampleTree &t = *slot;
        ++t.samples;
        ++samples_;
        const bool walked = (d.validData & DR_VM_CALL_STACK) && d.stackTrace.entries != nullptr && d.stackTrace.uiSize > 0;
        if (!walked) {
            ++notWalkable_;
            const std::uint32_t node = t.Child(0, kNotWalkable, ~std::size_t{0});
            ++t.nodes[node].self;
            Stamp(d, node, 0);
            return;
        }
        const std::size_t n = d.stackTrace.uiSize;
        std::size_t kept = n;
        std::uint32_t node = 0;
        if (n > o_.depth) {  // the innermost `depth` frames under one marker: self stays right
            kept = o_.depth;
            ++cut_;
            node = t.Child(0, kCut, ~std::size_t{0});
        }
        bool same = node == t.pathStart;
        t.pathStart = node;
        for (std::size_t i = kept, depth = 0; i-- > 0; ++depth) {
            const TId method = d.stackTrace.entries[i].methodId;
            same = same && depth < t.path.size() && t.nodes[t.path[depth]].method == method;
            const std::uint32_t child = same ? t.path[depth] : t.Child(node, method, o_.nodes);
            if (!same) t.path.resize(depth);
            if (!same && child != kNone) t.path.push_back(child);
            // The call site: where the frame below was when the sample was taken.
            if (child != kNone && i + 1 < kept && t.nodes[child].callLine == 0) {
                t.nodes[child].callLine = d.stackTrace.entries[i + 1].uiLineNumber;
            }
            if (child == kNone) {
                // Past the node budget: the sample is kept for its innermost method.
                ++beyond_;
                t.pathStart = kNone;
                const std::uint32_t marker = t.Child(0, kBeyond, ~std::size_t{0});
                node = t.Child(marker, d.stackTrace.entries[0].methodId, ~std::size_t{0});
                break;
            }
            node = child;
        }
        ++t.nodes[node].self;
        // The line the innermost frame was at: the hot line inside its method.
        const std::uint32_t line = d.stackTrace.entries[0].uiLineNumber;
        if (line != 0) t.nodes[node].AddLine(line);
        Stamp(d, node, line);
    }

    // Keeps the sample's time, while the timeline's budget lasts.
    void Stamp(const SSampleHitEventData &d, std::uint32_t node, std::uint32_t line) {
        if (!(d.validData & DR_CPU_TIMESTAMP)) return;
        if (timeline_.size() >= o_.timeline) {
            ++timelineNotKept_;
            return;
        }
        timeline_.push_back({d.uiCpuTimestamp, d.threadId, node, line});
    }

    void ThreadStarted(const SThreadStartEventData &d) {
        if (!(d.validData & DR_THREAD_NAME) || d.szThreadName == nullptr) return;
        std::lock_guard lock(mutex_);
        threadNames_[d.threadId] = d.szThreadName;
    }
    void Pause() {
        std::lock_guard lock(mutex_);
        paused_ = true;
    }
    void Resume() {
        std::lock_guard lock(mutex_);
        paused_ = false;
    }
    // EcCustomCommand: sample points and per-thread pause (MPI's EControlCommand ids).
    void Command(const SEcCustomCommandEventData &d) {
        martini::clients::HandleControlCommand(
            d, [this](const std::string &label) { Emit(label); },
            [this](const std::string &label) { Emit(label, /*startAfresh=*/true); },
            [this](TId thread, bool paused) {
                std::lock_guard lock(mutex_);
                if (paused) pausedThreads_.insert(thread);
                else pausedThreads_.erase(thread);
            });
    }
    void RateNotTaken(TResult r) { rateResult_ = r; }
    martini::clients::OutputDirectory &outputDirectory() { return outputDir_; }

    void Finish() { Emit(""); }

    // The profile so far: at the end (label ""), or at a sample or interval point, whose
    // files are named <name>-<label>; collection goes on. `startAfresh` (an interval
    // point): what was written is dropped, so the next files hold only what comes after.
    void Emit(const std::string &label, bool startAfresh = false) {
        std::lock_guard lock(mutex_);
        const std::uint64_t period = 1'000'000'000ull / o_.hz;
        const std::string clock = o_.wall ? "wall" : "cpu";
        report::Profile p;
        p.tool = "cgprof";
        p.mode = "sampled " + std::to_string(o_.hz) + " Hz " + clock;
        p.runtime = martini::clients::RuntimeName(mpi_, id_);
        p.metrics = {{"samples", "count"}, {clock, "nanoseconds"}};
        p.defaultMetric = 1;
        p.periodNs = period;
        std::unordered_map<TId, std::uint32_t> frameOf;
        auto frame = [&](TId method) {
            auto [it, added] = frameOf.emplace(method, static_cast<std::uint32_t>(p.frames.size()));
            if (added) {
                if (method == 0 || method == kNotWalkable || method == kCut || method == kBeyond) {
                    // Method id 0 in a stack: a frame the runtime could not name.
                    report::Frame f;
                    f.name = method == 0              ? "(unknown frame)"
                             : method == kNotWalkable ? "(stack not walkable)"
                             : method == kCut      ? "(outer frames cut: depth=" + std::to_string(o_.depth) + ")"
                                                   : "(more call paths: nodes=" + std::to_string(o_.nodes) + " reached)";
                    p.frames.push_back(f);
                } else {
                    p.frames.push_back(martini::clients::MethodFrame(mpi_, id_, method));
                }
            }
            return it->second;
        };
        std::vector<SampleTree *> ordered;
        std::unordered_map<TId, std::pair<std::uint32_t, std::vector<std::uint32_t>>> placed;  // thread: tree, nodes
        for (auto &[id, t] : trees_) ordered.push_back(t.get());
        std::sort(ordered.begin(), ordered.end(), [](auto *a, auto *b) { return a->threadId < b->threadId; });
        for (SampleTree *t : ordered) {
            report::Tree tree;
            tree.threadId = t->threadId;
            if (auto it = threadNames_.find(t->threadId); it != threadNames_.end()) tree.threadName = it->second;
            else tree.threadName = martini::clients::GetThreadName(mpi_, id_, t->threadId);
            tree.Clear(2);
            std::vector<std::uint32_t> to(t->nodes.size(), 0);
            for (std::uint32_t i = 1; i < t->nodes.size(); ++i) {
                const SampleNode &n = t->nodes[i];
                to[i] = tree.Add(to[n.parent], frame(n.method), 2);
                tree.nodes[to[i]].callLine = n.callLine;
                tree.nodes[to[i]].self = {n.self, n.self * period};
                tree.nodes[to[i]].selfLines = n.lines;
            }
            if (tree.nodes.size() > 1) {
                placed[t->threadId] = {static_cast<std::uint32_t>(p.threads.size()), std::move(to)};
                p.threads.push_back(std::move(tree));
            }
        }
        p.timeline.reserve(timeline_.size());
        for (const struct Stamp &s : timeline_) {
            auto it = placed.find(s.threadId);
            if (it != placed.end()) p.timeline.push_back({s.timeNs, it->second.first, it->second.second[s.node], s.line});
        }
        std::stable_sort(p.timeline.begin(), p.timeline.end(),
                         [](const report::TimedSample &a, const report::TimedSample &b) { return a.timeNs < b.timeNs; });
        report::NameOverloads(p.frames);
        p.NameThreads();
        p.Merge();
        p.counters = {{"sampling_hz", o_.hz},
                      {"samples", samples_},
                      {"samples_not_walkable", notWalkable_},
                      {"stacks_cut_at_depth", cut_},
                      {"samples_beyond_node_budget", beyond_},
                      {report::kTimelineNotKept, timelineNotKept_}};
        if (startAfresh) {
            ++intervals_;
            trees_.clear();
            timeline_.clear();
            samples_ = notWalkable_ = cut_ = beyond_ = timelineNotKept_ = 0;
        }
        if (!label.empty()) {
            const martini::clients::OutputOptions out =
                martini::clients::SamplePointOutput("cgprof", o_.out, label, startAfresh ? "interval point" : "sample point");
            martini::clients::WriteOutputs(p, out, outputDir_.Resolve(out));
            std::fflush(stderr);
            return;
        }
        std::fprintf(stderr, "cgprof: sampled at %u Hz of %s time: %llu samples%s, %llu could not be walked%s\n", o_.hz,
                     o_.wall ? "wall-clock" : "CPU", (unsigned long long)samples_,
                     intervals_ == 0 ? "" : (" since interval point " + std::to_string(intervals_)).c_str(),
                     (unsigned long long)notWalkable_,
                     rateResult_ == MRTE_RESULT_OK ? "" : " (the runtime did not take the rate: times assume it)");
        if (o_.out.top > 0) {
            std::ostringstream table;
            report::WriteTopTable(p, table, o_.out.top);
            std::fputs(table.str().c_str(), stderr);
        }
        martini::clients::WriteOutputs(p, o_.out, outputDir_.Resolve(o_.out));
        std::fflush(stderr);
    }

private:
    IMpi &mpi_;
    TId id_;
    SampledOptions o_;
    std::mutex mutex_;  // everything below
    bool paused_;
    std::unordered_map<TId, std::unique_ptr<SampleTree>> trees_;
    std::unordered_map<TId, std::string> threadNames_;
    std::unordered_set<TId> pausedThreads_;
    std::uint64_t samples_ = 0, notWalkable_ = 0, cut_ = 0, beyond_ = 0, timelineNotKept_ = 0;
    std::uint64_t intervals_ = 0;  // interval points written
    std::vector<struct Stamp> timeline_;  // in the order the samples came
    TResult rateResult_ = MRTE_RESULT_OK;
    martini::clients::OutputDirectory outputDir_;
};

struct SampledInstance {
    SampledProfiler profiler;
    martini::clients::Forward<ISampleHitEventObserver, SampledProfiler, SSampleHitEventData, &SampledProfiler::Sample>
        sample{profiler, DR_THREAD_ID | DR_VM_CALL_STACK | DR_CPU_TIMESTAMP};
    martini::clients::Forward<IThreadStartEventObserver, SampledProfiler, SThreadStartEventData,
                              &SampledProfiler::ThreadStarted>
        threadStart{profiler, DR_THREAD_ID | DR_THREAD_NAME};
    martini::clients::ForwardNoData<IVmShutdownEventObserver, SampledProfiler, &SampledProfiler::Finish> shutdown{profiler};
    martini::clients::ForwardNoData<IEcStartEventObserver, SampledProfiler, &SampledProfiler::Resume> start{profiler};
    martini::clients::ForwardNoData<IEcStopEventObserver, SampledProfiler, &SampledProfiler::Pause> stop{profiler};
    martini::clients::Forward<IEcCustomCommandEventObserver, SampledProfiler, SEcCustomCommandEventData,
                              &SampledProfiler::Command>
        command{profiler, DR_COMMAND};
    martini::clients::OutputDirObserver outputDir{profiler.outputDirectory()};
    SampledInstance(IMpi &mpi, TId id, SampledOptions o) : profiler(mpi, id, std::move(o)) {}
};

}  // namespace

TResult InstantiateSampled(IMpi &mpi, TId clientId, SampledOptions options) {
    auto owned = std::make_unique<SampledInstance>(mpi, clientId, std::move(options));
    SampledInstance *instance = owned.get();
    const SampledOptions &o = instance->profiler.options();
    TResult r = mpi.RegisterEvent(clientId, instance->sample);
    if (r == MRTE_RESULT_OK) r = mpi.RegisterEvent(clientId, instance->shutdown);
    if (r != MRTE_RESULT_OK) {
        std::fprintf(stderr, "cgprof: this runtime does not raise SampleHit (result %d): no sample mode here\n", int(r));
        return r;
    }
    mpi.RegisterEvent(clientId, instance->threadStart);
    mpi.RegisterEvent(clientId, instance->start);
    mpi.RegisterEvent(clientId, instance->stop);
    mpi.RegisterEvent(clientId, instance->command);
    mpi.RegisterEvent(clientId, instance->outputDir);
    if (const TResult rate = mpi.SetSamplingRate(clientId, o.hz, o.wall ? SC_WALL : SC_CPU); rate != MRTE_RESULT_OK) {
        std::fprintf(stderr, "cgprof: the runtime did not take %u Hz of %s time (result %d); sampling at its own rate\n",
                     o.hz, o.wall ? "wall-clock" : "CPU", int(rate));
        instance->profiler.RateNotTaken(rate);
    }
    owned.release();  // kept until the process ends (the runtime may raise events until then)
    return MRTE_RESULT_OK;
}

}  // namespace cgprof
