// heapprof: allocations by class and by allocating call stack (objects, bytes),
// objects still live at exit (ObjectFree), GC count and pauses (GcStart/GcEnd).
// Written against mpi/ only; runs on every runtime with a provider and under
// martini-replay. docs/heapprof.md describes the options and outputs.
//
// Modes: `sampled` (default) asks the runtime for one allocation in about every
// `interval` bytes (SetAllocationSamplingInterval; the JVM's SampledObjectAlloc) and
// scales each sample to the allocations it stands for; `exact` asks for every
// allocation (interval 0). Only classes the heap filter accepts are tracked: the
// others are not reported by the runtime at all.
#include <MpiAPI.h>

#include "martini/clients/control.h"
#include "martini/clients/frames.h"
#include "martini/clients/names.h"
#include "martini/clients/option_names.h"
#include "martini/clients/output.h"
#include "martini/clients/support.h"
#include "martini/filters/rule_set.h"
#include "martini/report/profile.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

using namespace Martini::MPI;
namespace report = martini::report;

namespace {

const char kUsage[] =
    "heapprof options (comma-separated):\n"
    "  sampled | exact   one allocation per interval bytes, scaled (default); or every allocation\n"
    "  interval=BYTES    sampling interval (default 524288, the JVM's own)\n"
    "  filter=RULES      track only these classes: +PATTERN|-PATTERN|...  or  @rules.json\n"
    "  include=PATTERN   shorthand: track classes matching PATTERN (* and ?); repeatable\n"
    "  depth=N           innermost stack frames kept per allocation (default 64)\n"
    "  nolive            do not track frees (no live objects at exit; cheaper)\n"
    "  top=N             rows of the tables printed at exit (default 20, 0: none)\n"
    "  out=DIR           write the files there (also set by `martini run --output`)\n"
    "  formats=LIST      json+collapsed+chrome+pprof+html (default: all; none)\n"
    "  name=BASE         base name of the files (default: heapprof)\n";

struct Options {
    bool exact = false;
    std::uint64_t interval = 512 * 1024;
    std::string filter;
    std::vector<std::string> includes;
    std::size_t depth = 64;
    bool live = true;
    martini::clients::OutputOptions out;
};

// Every option's name (docs/configuration.md lists them): a name that is none of them
// is refused, with the nearest one.
constexpr const char *kOptionNames[] = {"sampled", "exact", "interval", "filter", "include", "depth",
                                        "nolive", "top", "out", "formats", "name"};

std::string ParseOptions(const char *text, Options &o) {
    o.out.name = "heapprof";
    std::vector<martini::clients::Option> items;
    if (std::string e = martini::clients::SplitOptions(text, items); !e.empty()) return e;
    for (const auto &it : items) {
        const std::string &k = it.key;
        std::string error;
        if (k == "sample" || k == "wall") {
            return "cannot use samples (SampleHit): heapprof samples allocations (interval=BYTES); cgprof=sample "
                   "samples stacks";
        }
        if (std::string e = martini::clients::CheckOptionName(k, kOptionNames); !e.empty()) return e;
        if ((k == "sampled" || k == "exact" || k == "nolive") && it.hasValue) return "option '" + k + "' takes no value";
        if (k == "sampled") o.exact = false;
        else if (k == "exact") o.exact = true;
        else if (k == "nolive") o.live = false;
        else if (k == "interval" || k == "depth") {
            std::uint64_t n = 0;
            if (!martini::clients::ParseCount(it.value, n)) return "option '" + k + "': '" + it.value + "' is not a count";
            if (k == "interval") {
                if (n == 0 || n > 0x7fffffff) return "option 'interval': between 1 and 2147483647 bytes (exact: every allocation)";
                o.interval = n;
            } else {
                if (n == 0 || n > 4096) return "option 'depth': between 1 and 4096";
                o.depth = n;
            }
        } else if (k == "filter") {
            if (it.value.empty()) return "option 'filter' needs rules";
            o.filter = it.value;
        } else if (k == "include") {
            if (it.value.empty()) return "option 'include' needs a pattern";
            o.includes.push_back(it.value);
        } else if (o.out.Parse(k, it.value, error)) {
            if (!error.empty()) return error;
        } else {
            return "option '" + k + "' is known but not handled";
        }
    }
    if (!o.filter.empty() && !o.includes.empty()) return "give either filter= or include=, not both";
    return "";
}

// ---- Per-thread allocation trees ----------------------------------------------------

enum class Kind : std::uint8_t { kMethod, kClass, kTruncated };

struct HeapNode {
    TId key = 0;  // method id, class id
    Kind kind = Kind::kMethod;
    std::uint32_t parent = 0xffffffffu;
    double allocObjects = 0, allocBytes = 0;
};

struct NodeKey {
    std::uint32_t parent;
    TId key;
    Kind kind;
    bool operator==(const NodeKey &) const = default;
};
struct NodeKeyHash {
    std::size_t operator()(const NodeKey &k) const noexcept {
        return std::hash<std::uint64_t>()((k.key * 0x9E3779B97F4A7C15ull) ^ (std::uint64_t(k.parent) << 2) ^
                                          std::uint64_t(k.kind));
    }
};

struct HeapTree {
    TId threadId = 0;
    std::mutex mutex;  // the owning thread allocates; the end reads
    std::vector<HeapNode> nodes{HeapNode{}};
    std::unordered_map<NodeKey, std::uint32_t, NodeKeyHash> children;

    std::uint32_t Child(std::uint32_t parent, TId key, Kind kind) {
        auto [it, added] = children.emplace(NodeKey{parent, key, kind}, static_cast<std::uint32_t>(nodes.size()));
        if (added) {
            HeapNode n;
            n.key = key;
            n.kind = kind;
            n.parent = parent;
            nodes.push_back(n);
        }
        return it->second;
    }
};

struct LiveObject {
    HeapTree *tree;
    std::uint32_t node;
    std::uint64_t size;
    double weight;
};

// Objects allocated and not yet freed, sharded: allocations on many threads and frees
// on the collector's thread rarely meet on one lock.
class LiveObjects {
public:
    void Add(TId object, const LiveObject &o) {
        Shard &s = shards_[Index(object)];
        std::lock_guard lock(s.mutex);
        s.objects[object] = o;
    }
    void Remove(TId object) {
        Shard &s = shards_[Index(object)];
        std::lock_guard lock(s.mutex);
        s.objects.erase(object);
    }
    template <class F>
    void ForEach(F f) {
        for (Shard &s : shards_) {
            std::lock_guard lock(s.mutex);
            for (const auto &[id, o] : s.objects) f(o);
        }
    }

private:
    static std::size_t Index(TId id) { return (id * 0x9E3779B97F4A7C15ull) >> 58; }  // 64 shards
    struct Shard {
        std::mutex mutex;
        std::unordered_map<TId, LiveObject> objects;
    };
    Shard shards_[64];
};

// The profile's frames: a method's, "new CLASS" for an allocated class, and the
// marker of stacks cut at depth=; each added on first use.
class HeapFrames {
public:
    HeapFrames(IMpi &mpi, TId id, report::Profile &p) : mpi_(mpi), id_(id), p_(p) {}
    std::uint32_t operator()(Kind kind, TId key) {
        auto [it, added] = index_.emplace(std::pair{kind, key}, static_cast<std::uint32_t>(p_.frames.size()));
        if (added) {
            report::Frame f;
            if (kind == Kind::kMethod) {
                f = martini::clients::MethodFrame(mpi_, id_, key);
            } else if (kind == Kind::kClass) {
                f.className = key == 0 ? "" : martini::clients::GetClassName(mpi_, id_, key);
                if (f.className.empty()) f.className = key == 0 ? "(unknown class)" : "class#" + std::to_string(key);
                f.name = "new " + f.className;
            } else {
                f.name = "(deeper frames)";
            }
            p_.frames.push_back(std::move(f));
        }
        return it->second;
    }

private:
    IMpi &mpi_;
    TId id_;
    report::Profile &p_;
    std::map<std::pair<Kind, TId>, std::uint32_t> index_;
};

// Live objects per allocation node (tree, node): objects and bytes, scaled.
using LiveByNode = std::map<std::pair<const HeapTree *, std::uint32_t>, std::pair<double, double>>;

// GC pauses: their total and longest, nanoseconds.
struct GcPauseTotals {
    std::uint64_t total = 0, max = 0;
};

class HeapProfiler {
public:
    HeapProfiler(IMpi &mpi, TId id, Options o) : mpi_(mpi), id_(id), o_(std::move(o)) {}
    const Options &options() const { return o_; }

    HeapTree &Tree(TId threadId) { return trees_.Get(threadId); }

    void Allocated(const SObjectAllocEventData &d) {
        if (stopped_.load(std::memory_order_relaxed) || paused_.load(std::memory_order_relaxed)) return;
        if (pausedThreadCount_.load(std::memory_order_relaxed) != 0 && ThreadPaused(d.threadId)) return;
        const std::uint64_t size = (d.validData & DR_OBJECT_SIZE) ? d.uiObjectSize : 0;
        // A sample of a sampled stream stands for 1 / P(sampled) allocations of its size.
        double weight = 1.0;
        if (!o_.exact && size > 0) weight = 1.0 / (1.0 - std::exp(-double(size) / double(o_.interval)));
        HeapTree &t = Tree((d.validData & DR_THREAD_ID) ? d.threadId : 0);
        std::uint32_t node = 0;
        {
            std::lock_guard lock(t.mutex);
            if (d.validData & DR_VM_CALL_STACK) {
                const unsigned n = std::min<unsigned>(d.stackTrace.uiSize, d.stackTrace.uiActualSize);
                const unsigned kept = std::min<unsigned>(n, static_cast<unsigned>(o_.depth));
                if (kept < n) node = t.Child(node, 0, Kind::kTruncated);
                for (unsigned i = kept; i-- > 0;) node = t.Child(node, d.stackTrace.entries[i].methodId, Kind::kMethod);
            }
            node = t.Child(node, (d.validData & DR_CLASS_ID) ? d.classId : 0, Kind::kClass);
            t.nodes[node].allocObjects += weight;
            t.nodes[node].allocBytes += weight * double(size);
        }
        samples_.fetch_add(1, std::memory_order_relaxed);
        if (o_.live && (d.validData & DR_OBJECT_ID)) live_.Add(d.objectId, {&t, node, size, weight});
    }

    void Freed(const SObjectFreeEventData &d) {
        if (d.validData & DR_OBJECT_ID) live_.Remove(d.objectId);
        freed_.fetch_add(1, std::memory_order_relaxed);
    }

    void GcStarted(const SGcStartEventData &d) {
        std::lock_guard lock(gcMutex_);
        ++gcCount_;
        gcStart_ = (d.validData & DR_CPU_TIMESTAMP) ? d.uiCpuTimestamp : 0;
    }
    void GcEnded(const SGcEndEventData &d) {
        std::lock_guard lock(gcMutex_);
        if (gcStart_ != 0 && (d.validData & DR_CPU_TIMESTAMP) && d.uiCpuTimestamp >= gcStart_) {
            gcPauses_.push_back({gcStart_, d.uiCpuTimestamp - gcStart_});
        }
        gcStart_ = 0;
    }

    void ThreadStarted(const SThreadStartEventData &d) {
        if (!(d.validData & DR_THREAD_NAME) || d.szThreadName == nullptr) return;
        std::lock_guard lock(mutex_);
        threadNames_[d.threadId] = d.szThreadName;
    }

    martini::clients::OutputDirectory &outputDirectory() { return outputDir_; }
    void Finish();

    // External control: EcStop/EcStart pause and resume recording allocations (frees
    // are still seen, so live objects stay right); EcCustomCommand pauses one thread
    // (CC_THREAD_PAUSE/RESUME) or writes a sample point (CC_SAMPLE).
    void Pause() { paused_.store(true); }
    void Resume() { paused_.store(false); }
    void Command(const SEcCustomCommandEventData &d) {
        martini::clients::HandleControlCommand(
            d, [this](const std::string &label) { Emit(label); },
            [](const std::string &label) { martini::clients::IntervalNotKept("heapprof", label); },
            [this](TId thread, bool paused) {
                std::lock_guard lock(pausedMutex_);
                if (paused) pausedThreads_.insert(thread);
                else pausedThreads_.erase(thread);
                pausedThreadCount_.store(static_cast<unsigned>(pausedThreads_.size()));
            });
    }

private:
    // Writes the table (at the end only) and the report library's files; a sample
    // point's are named after `label`.
    void Emit(const std::string &label);
    // Emit's parts; the caller holds mutex_.
    LiveByNode LiveNow();
    report::Profile NewProfile();
    void AddTrees(report::Profile &p, const LiveByNode &live);
    void AddTree(report::Profile &p, HeapFrames &frame, HeapTree &t, const LiveByNode &live);
    GcPauseTotals AddGcAndCounters(report::Profile &p);
    void PrintSummary(const report::Profile &p, const GcPauseTotals &gc);

    bool ThreadPaused(TId thread) {
        std::lock_guard lock(pausedMutex_);
        return pausedThreads_.count(thread) != 0;
    }
    IMpi &mpi_;
    TId id_;
    Options o_;
    std::mutex mutex_;  // thread names
    martini::clients::PerThread<HeapTree> trees_;
    std::unordered_map<TId, std::string> threadNames_;
    LiveObjects live_;
    std::atomic<std::uint64_t> samples_{0}, freed_{0};
    std::atomic<bool> stopped_{false};
    std::atomic<bool> paused_{false};
    std::mutex pausedMutex_;
    std::set<TId> pausedThreads_;
    std::atomic<unsigned> pausedThreadCount_{0};
    std::mutex gcMutex_;
    std::uint64_t gcCount_ = 0, gcStart_ = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> gcPauses_;  // start, duration
    martini::clients::OutputDirectory outputDir_;
};

std::string Bytes(double b) {
    std::ostringstream s;
    s.precision(1);
    s << std::fixed;
    if (b >= 1024.0 * 1024 * 1024) s << b / (1024.0 * 1024 * 1024) << " GiB";
    else if (b >= 1024.0 * 1024) s << b / (1024.0 * 1024) << " MiB";
    else if (b >= 1024.0) s << b / 1024.0 << " KiB";
    else s << std::llround(b) << " B";
    return s.str();
}

// A row of the table: a class or an allocation site, and its figures by metric.
struct SummaryRow {
    std::string name;
    double v[4] = {0, 0, 0, 0};
};

// The rows by class and by allocation site (allocating method -> class), the most
// bytes first.
struct SummaryRows {
    std::vector<SummaryRow> byClass, bySite;
};

template <class Map>
std::vector<SummaryRow> SortedByBytes(const Map &map) {
    std::vector<SummaryRow> rows;
    for (const auto &[k, r] : map) rows.push_back(r);
    std::stable_sort(rows.begin(), rows.end(), [](const SummaryRow &a, const SummaryRow &b) { return a.v[1] > b.v[1]; });
    return rows;
}

// By class: the "new C" frames of the merged tree hold all self values.
SummaryRows CollectSummaryRows(const report::Profile &p) {
    const std::size_t m = p.metrics.size();
    std::map<std::uint32_t, SummaryRow> byClass;
    std::map<std::pair<std::uint32_t, std::uint32_t>, SummaryRow> bySite;  // (method frame, class frame)
    for (std::size_t i = 1; i < p.merged.nodes.size(); ++i) {
        const report::Node &n = p.merged.nodes[i];
        const report::Frame &f = p.frames[n.frame];
        if (f.name.rfind("new ", 0) != 0) continue;
        SummaryRow &r = byClass[n.frame];
        r.name = f.className;
        for (std::size_t k = 0; k < m; ++k) r.v[k] += double(n.self[k]);
        const std::uint32_t parentFrame = n.parent == 0 ? report::kRootFrame : p.merged.nodes[n.parent].frame;
        SummaryRow &s = bySite[{parentFrame, n.frame}];
        s.name = (parentFrame == report::kRootFrame ? std::string("(no stack)") : p.frames[parentFrame].name) +
                 " -> " + f.className;
        s.v[0] += double(n.self[0]);
        s.v[1] += double(n.self[1]);
    }
    return {SortedByBytes(byClass), SortedByBytes(bySite)};
}

void WriteClassTable(std::ostream &out, const std::vector<SummaryRow> &classes, std::size_t top, bool live) {
    char line[512];
    std::snprintf(line, sizeof line, "%-48s %14s %12s %14s %12s\n", "class", "alloc objects", "alloc bytes",
                  live ? "live objects" : "", live ? "live bytes" : "");
    out << line;
    for (std::size_t i = 0; i < classes.size() && i < top; ++i) {
        const SummaryRow &r = classes[i];
        std::snprintf(line, sizeof line, "%-48s %14lld %12s %14s %12s\n", r.name.c_str(), std::llround(r.v[0]),
                      Bytes(r.v[1]).c_str(), live ? std::to_string(std::llround(r.v[2])).c_str() : "",
                      live ? Bytes(r.v[3]).c_str() : "");
        out << line;
    }
}

void WriteSiteTable(std::ostream &out, const std::vector<SummaryRow> &sites, std::size_t top) {
    out << "top allocation sites (allocating method -> class):\n";
    char line[512];
    for (std::size_t i = 0; i < sites.size() && i < top; ++i) {
        std::snprintf(line, sizeof line, "  %-70s %12lld %12s\n", sites[i].name.c_str(), std::llround(sites[i].v[0]),
                      Bytes(sites[i].v[1]).c_str());
        out << line;
    }
}

void HeapProfiler::Finish() {
    stopped_.store(true);
    mpi_.DisableEventGroup(id_, EG_HEAP);
    Emit("");
}

void HeapProfiler::Emit(const std::string &label) {
    std::lock_guard lock(mutex_);
    // A sample point's files are named after it; the table is printed at the end only.
    const martini::clients::OutputOptions outOptions =
        label.empty() ? o_.out : martini::clients::SamplePointOutput("heapprof", o_.out, label);
    const LiveByNode live = LiveNow();
    report::Profile p = NewProfile();
    AddTrees(p, live);
    const GcPauseTotals gc = AddGcAndCounters(p);
    if (outOptions.top > 0) PrintSummary(p, gc);
    martini::clients::WriteOutputs(p, outOptions, outputDir_.Resolve(outOptions));
    std::fflush(stderr);
}

// Live objects now, charged to their allocation node (kept apart from the nodes,
// so that a sample point changes nothing).
LiveByNode HeapProfiler::LiveNow() {
    LiveByNode live;
    if (o_.live) {
        live_.ForEach([&live](const LiveObject &o) {
            auto &[objects, bytes] = live[{o.tree, o.node}];
            objects += o.weight;
            bytes += o.weight * double(o.size);
        });
    }
    return live;
}

// A profile with no samples yet: the tool, mode, runtime and metrics.
report::Profile HeapProfiler::NewProfile() {
    report::Profile p;
    p.tool = "heapprof";
    p.mode = o_.exact ? "exact" : "sampled";
    p.runtime = martini::clients::RuntimeName(mpi_, id_);
    p.metrics = {{"alloc_objects", "count"}, {"alloc_space", "bytes"}};
    if (o_.live) {
        p.metrics.push_back({"inuse_objects", "count"});
        p.metrics.push_back({"inuse_space", "bytes"});
    }
    p.defaultMetric = 1;
    return p;
}

// Every thread's allocation tree, then the merged one.
void HeapProfiler::AddTrees(report::Profile &p, const LiveByNode &live) {
    HeapFrames frame(mpi_, id_, p);
    trees_.ForEachOrdered([&](HeapTree &t) { AddTree(p, frame, t, live); });
    report::NameOverloads(p.frames);
    p.NameThreads();
    p.Merge();
}

void HeapProfiler::AddTree(report::Profile &p, HeapFrames &frame, HeapTree &t, const LiveByNode &live) {
    const std::size_t m = p.metrics.size();
    std::lock_guard treeLock(t.mutex);
    report::Tree tree;
    tree.threadId = t.threadId;
    if (auto it = threadNames_.find(t.threadId); it != threadNames_.end()) tree.threadName = it->second;
    else tree.threadName = martini::clients::GetThreadName(mpi_, id_, t.threadId);
    tree.Clear(m);
    std::vector<std::uint32_t> to(t.nodes.size(), 0);
    for (std::uint32_t i = 1; i < t.nodes.size(); ++i) {
        const HeapNode &n = t.nodes[i];
        to[i] = tree.Add(to[n.parent], frame(n.kind, n.key), m);
        auto &self = tree.nodes[to[i]].self;
        self[0] = static_cast<std::uint64_t>(std::llround(n.allocObjects));
        self[1] = static_cast<std::uint64_t>(std::llround(n.allocBytes));
        if (o_.live) {
            const auto it = live.find({&t, i});
            if (it != live.end()) {
                self[2] = static_cast<std::uint64_t>(std::llround(it->second.first));
                self[3] = static_cast<std::uint64_t>(std::llround(it->second.second));
            }
        }
    }
    if (tree.nodes.size() > 1) p.threads.push_back(std::move(tree));
}

// The GC pauses as spans on a track of their own, and the profile's counters.
GcPauseTotals HeapProfiler::AddGcAndCounters(report::Profile &p) {
    GcPauseTotals gc;
    std::lock_guard gcLock(gcMutex_);
    if (!gcPauses_.empty()) {
        report::Frame frame;
        frame.name = "GC pause";
        p.frames.push_back(frame);
        p.threadNames.push_back({0, "GC"});
    }
    for (const auto &[start, duration] : gcPauses_) {
        gc.total += duration;
        gc.max = std::max(gc.max, duration);
        p.spans.push_back({0, static_cast<std::uint32_t>(p.frames.size() - 1), start, duration, "gc"});
    }
    p.counters = {{"samples", samples_.load()},
                  {"frees", freed_.load()},
                  {"gc_count", gcCount_},
                  {"gc_pause_total_ns", gc.total},
                  {"gc_pause_max_ns", gc.max},
                  {"sampling_interval_bytes", o_.exact ? 0 : o_.interval}};
    return gc;
}

// The table on stderr: totals, then the top classes and allocation sites by bytes.
void HeapProfiler::PrintSummary(const report::Profile &p, const GcPauseTotals &gc) {
    const std::size_t m = p.metrics.size();
    const auto totals = report::Totals(p.merged, m);
    const SummaryRows rows = CollectSummaryRows(p);
    const double totalObjects = totals.empty() ? 0 : double(totals[0][0]);
    const double totalBytes = totals.empty() ? 0 : double(totals[0][1]);
    std::ostringstream out;
    out << "heapprof: " << (o_.exact ? "every allocation" : "sampled every " + Bytes(double(o_.interval)) + ", scaled")
        << "; " << std::llround(totalObjects) << " objects, " << Bytes(totalBytes) << " allocated ("
        << samples_.load() << " events); " << gcCount_ << " GCs, pauses " << std::fixed;
    out.precision(3);
    out << double(gc.total) / 1e6 << " ms total, " << double(gc.max) / 1e6 << " ms max\n";
    WriteClassTable(out, rows.byClass, o_.out.top, o_.live);
    WriteSiteTable(out, rows.bySite, o_.out.top);
    std::fputs(out.str().c_str(), stderr);
}

// ---- Observers ------------------------------------------------------------------------

struct Instance {
    HeapProfiler profiler;
    template <class Base, class Data, void (HeapProfiler::*Handler)(const Data &)>
    using To = martini::clients::Forward<Base, HeapProfiler, Data, Handler>;
    To<IObjectAllocEventObserver, SObjectAllocEventData, &HeapProfiler::Allocated> alloc{
        profiler, DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_OBJECT_SIZE | DR_VM_CALL_STACK};
    To<IObjectFreeEventObserver, SObjectFreeEventData, &HeapProfiler::Freed> free{profiler, DR_OBJECT_ID};
    To<IGcStartEventObserver, SGcStartEventData, &HeapProfiler::GcStarted> gcStart{profiler, DR_CPU_TIMESTAMP};
    To<IGcEndEventObserver, SGcEndEventData, &HeapProfiler::GcEnded> gcEnd{profiler, DR_CPU_TIMESTAMP};
    To<IThreadStartEventObserver, SThreadStartEventData, &HeapProfiler::ThreadStarted> threadStart{
        profiler, DR_THREAD_ID | DR_THREAD_NAME};
    martini::clients::ForwardNoData<IVmShutdownEventObserver, HeapProfiler, &HeapProfiler::Finish> shutdown{profiler};
    martini::clients::ForwardNoData<IEcStartEventObserver, HeapProfiler, &HeapProfiler::Resume> start{profiler};
    martini::clients::ForwardNoData<IEcStopEventObserver, HeapProfiler, &HeapProfiler::Pause> stop{profiler};
    To<IEcCustomCommandEventObserver, SEcCustomCommandEventData, &HeapProfiler::Command> command{profiler, DR_COMMAND};
    martini::clients::OutputDirObserver outputDir{profiler.outputDirectory()};
    martini::filters::RuleSet rules;  // asked once per class, never per allocation
    Instance(IMpi &mpi, TId id, Options o) : profiler(mpi, id, std::move(o)) {}
};

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *options) {
    Options o;
    if (TResult r = martini::clients::ParseClientOptions("heapprof", kUsage, options, o, ParseOptions); r != MRTE_RESULT_OK) {
        return r;
    }
    auto owned = std::make_unique<Instance>(*mpi, clientId, std::move(o));
    Instance *in = owned.get();
    const Options &opts = in->profiler.options();
    TResult r = mpi->RegisterEvent(clientId, in->alloc);
    if (r == MRTE_RESULT_OK) r = mpi->RegisterEvent(clientId, in->shutdown);
    if (r != MRTE_RESULT_OK) {
        std::fprintf(stderr, "heapprof: this runtime does not give allocation events (result %d)\n", int(r));
        return r;
    }
    if (opts.live && mpi->RegisterEvent(clientId, in->free) != MRTE_RESULT_OK) {
        std::fprintf(stderr, "heapprof: this runtime does not report frees: no live objects at exit\n");
    }
    mpi->RegisterEvent(clientId, in->gcStart);
    mpi->RegisterEvent(clientId, in->gcEnd);
    mpi->RegisterEvent(clientId, in->threadStart);
    mpi->RegisterEvent(clientId, in->outputDir);
    mpi->RegisterEvent(clientId, in->start);
    mpi->RegisterEvent(clientId, in->stop);
    mpi->RegisterEvent(clientId, in->command);
    if (!opts.filter.empty() || !opts.includes.empty()) {
        std::string line = opts.filter;
        for (const auto &p : opts.includes) line += (line.empty() ? "+" : "|+") + p;
        r = martini::filters::Install(in->rules, line, *mpi, clientId, EG_HEAP, "heapprof");
        if (r != MRTE_RESULT_OK) return r;
    }
    r = mpi->SetAllocationSamplingInterval(clientId, opts.exact ? 0 : static_cast<unsigned>(opts.interval));
    if (r != MRTE_RESULT_OK && r != MRTE_ERROR_NOT_SUPPORTED) {
        std::fprintf(stderr, "heapprof: cannot set the allocation sampling interval (result %d)\n", int(r));
        return r;
    }
    owned.release();
    return MRTE_RESULT_OK;
}

// For `martini run` and `martini attach`: the options checked before the program starts
// (martini/clients/option_names.h).
extern "C" API_EXPORT const char *MPICL_CheckOptions(const char *options) {
    return martini::clients::CheckOptions<Options>(options, ParseOptions, kUsage);
}
