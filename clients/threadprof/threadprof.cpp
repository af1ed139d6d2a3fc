// threadprof: threads and monitors. Thread lifetimes (start, end, name, group, parent)
// and the time each spent blocked on monitors and waiting; for each contended monitor
// its class, who waited, how long, and who held it; wait/notify counts; thread
// interactions where the runtime reports them. Outputs: a text summary of the top
// contended monitors, a Chrome trace with one track per thread and contention and
// waits as slices, the detailed JSON (NAME.threads.json), and the report library's
// files over a tree "thread -> blocked on / waiting on -> monitor class".
// Written against mpi/ only. docs/threadprof.md describes it.
#include <MpiAPI.h>

#include "martini/clients/control.h"
#include "martini/clients/names.h"
#include "martini/clients/option_names.h"
#include "martini/clients/output.h"
#include "martini/clients/support.h"
#include "martini/filters/rule_set.h"
#include "martini/report/profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

using namespace Martini::MPI;
namespace report = martini::report;

namespace {

const char kUsage[] =
    "threadprof options (comma-separated):\n"
    "  filter=RULES      monitors of these classes only: +PATTERN|-PATTERN|...  or  @rules.json\n"
    "  slices=N          at most N contention/wait slices in the Chrome trace (default 100000)\n"
    "  top=N             rows of the summary printed at exit (default 20, 0: none)\n"
    "  out=DIR           write the files there (also set by `martini run --output`)\n"
    "  formats=LIST      json+collapsed+chrome+pprof+html (default: all; none)\n"
    "  name=BASE         base name of the files (default: threadprof)\n";

struct Options {
    std::string filter;
    std::size_t slices = 100000;
    martini::clients::OutputOptions out;
};

// Every option's name (docs/configuration.md lists them): a name that is none of them
// is refused, with the nearest one.
constexpr const char *kOptionNames[] = {"filter", "slices", "top", "out", "formats", "name"};

std::string ParseOptions(const char *text, Options &o) {
    o.out.name = "threadprof";
    std::vector<martini::clients::Option> items;
    if (std::string e = martini::clients::SplitOptions(text, items); !e.empty()) return e;
    for (const auto &it : items) {
        std::string error;
        if (it.key == "sample" || it.key == "wall") {
            return "cannot use samples (SampleHit): threadprof records monitor and thread events; cgprof=sample,wall "
                   "samples waiting threads";
        }
        if (std::string e = martini::clients::CheckOptionName(it.key, kOptionNames); !e.empty()) return e;
        if (it.key == "filter") {
            if (it.value.empty()) return "option 'filter' needs rules";
            o.filter = it.value;
        } else if (it.key == "slices") {
            std::uint64_t n = 0;
            if (!martini::clients::ParseCount(it.value, n)) return "option 'slices': '" + it.value + "' is not a count";
            o.slices = n;
        } else if (o.out.Parse(it.key, it.value, error)) {
            if (!error.empty()) return error;
        } else {
            return "option '" + it.key + "' is known but not handled";
        }
    }
    return "";
}

// DR_CPU_TIMESTAMP is CLOCK_MONOTONIC nanoseconds; when a runtime gives no timestamp
// with an event, the same clock read here stands in for it.
std::uint64_t MonotonicNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::uint64_t(ts.tv_sec) * 1000000000u + std::uint64_t(ts.tv_nsec);
}

// The latest event time seen: "now" for threads still running at the end.
std::atomic<std::uint64_t> gLastSeen{0};

template <class Data>
std::uint64_t TimeOf(const Data &d) {
    const std::uint64_t t = (d.validData & DR_CPU_TIMESTAMP) ? d.uiCpuTimestamp : MonotonicNs();
    std::uint64_t seen = gLastSeen.load(std::memory_order_relaxed);
    while (t > seen && !gLastSeen.compare_exchange_weak(seen, t, std::memory_order_relaxed)) {
    }
    return t;
}

struct ThreadRecord {
    TId id = 0;
    std::string name, group;
    TId parent = 0;
    std::uint64_t start = 0, end = 0;  // 0: before profiling / still running
    std::uint64_t blockedNs = 0, waitingNs = 0;
    std::uint64_t contentions = 0, waits = 0;
    // in progress
    bool blocked = false, waiting = false;
    TId monitor = 0, monitorClass = 0, owner = 0;
    std::uint64_t since = 0;
};

struct MonitorRecord {
    TId object = 0, classId = 0;
    std::uint64_t contentions = 0, blockedNs = 0, maxBlockedNs = 0;
    std::map<TId, std::pair<std::uint64_t, std::uint64_t>> waiters;  // thread -> (count, ns)
    std::map<TId, std::uint64_t> holders;                             // thread -> times it held it
    std::uint64_t waits = 0, waited = 0, timeouts = 0, waitingNs = 0;
    std::map<TId, std::pair<std::uint64_t, std::uint64_t>> waitedBy;  // thread -> (count, ns)
};

struct Slice {
    TId thread;
    std::string label;
    std::uint64_t start, duration;
    std::string category;
};

// The profile's frames by name, each added on first use.
class FrameTable {
public:
    explicit FrameTable(report::Profile &p) : p_(p) {}
    std::uint32_t operator()(const std::string &name) {
        auto [it, added] = index_.emplace(name, static_cast<std::uint32_t>(p_.frames.size()));
        if (added) {
            report::Frame f;
            f.name = name;
            p_.frames.push_back(f);
        }
        return it->second;
    }

private:
    report::Profile &p_;
    std::map<std::string, std::uint32_t> index_;
};

class ThreadProfiler {
public:
    ThreadProfiler(IMpi &mpi, TId id, Options o) : mpi_(mpi), id_(id), o_(std::move(o)) {}
    const Options &options() const { return o_; }
    martini::clients::OutputDirectory &outputDirectory() { return outputDir_; }

    void ThreadStarted(const SThreadStartEventData &d) {
        std::lock_guard lock(mutex_);
        ThreadRecord &t = Thread(d.threadId);
        if ((d.validData & DR_THREAD_NAME) && d.szThreadName) t.name = d.szThreadName;
        if ((d.validData & DR_THREAD_GROUP) && d.szThreadGroupName) t.group = d.szThreadGroupName;
        if (d.validData & DR_THREAD_PARENT_ID) t.parent = d.parentThreadId;
        t.start = TimeOf(d);
    }
    void ThreadEnded(const SThreadEndEventData &d) {
        std::lock_guard lock(mutex_);
        Thread(d.threadId).end = TimeOf(d);
    }

    void ContentionBegins(const SContendedMonitorEnterEventData &d) {
        const std::uint64_t now = TimeOf(d);
        // The holder by name, now (it may be gone at the end): GetThreadInfo with a
        // small buffer first, grown when Martini says it is too short.
        TId owner = (d.validData & DR_MONITOR_OWNER_THREAD_ID) ? d.ownerThreadId : 0;
        std::string ownerName;
        if (owner != 0) ownerName = martini::clients::GetThreadName(mpi_, id_, owner, 16);
        const TId cls = (d.validData & DR_CLASS_ID) ? d.classId : ClassOfObject(d.objectId);
        std::lock_guard lock(mutex_);
        if (!Recording(d.threadId)) return;
        ThreadRecord &t = Thread(d.threadId);
        t.blocked = true;
        t.monitor = d.objectId;
        t.monitorClass = cls;
        t.owner = owner;
        t.since = now;
        if (owner != 0 && !ownerName.empty() && Thread(owner).name.empty()) Thread(owner).name = ownerName;
        MonitorRecord &m = Monitor(d.objectId, cls);
        if (owner != 0) ++m.holders[owner];
    }
    void ContentionEnds(const SContendedMonitorEnteredEventData &d) {
        const std::uint64_t now = TimeOf(d);
        std::lock_guard lock(mutex_);
        ThreadRecord &t = Thread(d.threadId);
        if (!t.blocked) return;  // began before profiling
        t.blocked = false;
        const std::uint64_t ns = now > t.since ? now - t.since : 0;
        t.blockedNs += ns;
        ++t.contentions;
        MonitorRecord &m = Monitor(t.monitor, t.monitorClass);
        ++m.contentions;
        m.blockedNs += ns;
        m.maxBlockedNs = std::max(m.maxBlockedNs, ns);
        auto &w = m.waiters[d.threadId];
        ++w.first;
        w.second += ns;
        AddSlice(d.threadId, "blocked on " + ClassName(t.monitorClass) + HeldBy(t.owner), t.since, ns, "contention");
    }
    void WaitBegins(const SMonitorWaitEventData &d) {
        const std::uint64_t now = TimeOf(d);
        const TId cls = (d.validData & DR_CLASS_ID) ? d.classId : ClassOfObject(d.objectId);
        std::lock_guard lock(mutex_);
        if (!Recording(d.threadId)) return;
        ThreadRecord &t = Thread(d.threadId);
        t.waiting = true;
        t.monitor = d.objectId;
        t.monitorClass = cls;
        t.since = now;
        ++Monitor(d.objectId, cls).waits;
    }
    void WaitEnds(const SMonitorWaitedEventData &d) {
        const std::uint64_t now = TimeOf(d);
        std::lock_guard lock(mutex_);
        ThreadRecord &t = Thread(d.threadId);
        if (!t.waiting) return;
        t.waiting = false;
        const std::uint64_t ns = now > t.since ? now - t.since : 0;
        t.waitingNs += ns;
        ++t.waits;
        MonitorRecord &m = Monitor(t.monitor, t.monitorClass);
        ++m.waited;
        if ((d.validData & DR_MONITOR_TIMEOUT) && d.bTimedOut) ++m.timeouts;
        m.waitingNs += ns;
        auto &w = m.waitedBy[d.threadId];
        ++w.first;
        w.second += ns;
        AddSlice(d.threadId, "waiting on " + ClassName(t.monitorClass), t.since, ns, "wait");
    }
    void Interaction(const SThreadInteractionEventData &d) {
        std::lock_guard lock(mutex_);
        static const char *kNames[] = {"none", "notify", "notifyAll", "start", "join", "sleep", "interrupt"};
        const int type = static_cast<int>(d.interactionType);
        ++interactions_[type >= 0 && type < 7 ? kNames[type] : "other"];
    }

    void Finish();

    // External control: EcStop/EcStart pause and resume recording; EcCustomCommand
    // pauses one thread (CC_THREAD_PAUSE/RESUME) or writes a sample point (CC_SAMPLE).
    void Pause() { paused_.store(true); }
    void Resume() { paused_.store(false); }
    void Command(const SEcCustomCommandEventData &d) {
        martini::clients::HandleControlCommand(
            d, [this](const std::string &label) { Emit(label); },
            [](const std::string &label) { martini::clients::IntervalNotKept("threadprof", label); },
            [this](TId thread, bool paused) {
                std::lock_guard lock(mutex_);
                if (paused) pausedThreads_.insert(thread);
                else pausedThreads_.erase(thread);
            });
    }

private:
    // Totals over the monitors, for the summary and the profile's counters.
    struct Totals {
        std::uint64_t blocked = 0, contentions = 0, waits = 0;
    };

    // Writes the summary (at the end only), the report library's files and the
    // detailed JSON; a sample point's are named after `label`.
    void Emit(const std::string &label);
    // Emit's parts; the caller holds mutex_.
    void NameThreadsSeenByEvents();
    std::vector<const MonitorRecord *> ContendedMonitors() const;
    Totals SumMonitors() const;
    void PrintSummary(std::size_t top, const std::vector<const MonitorRecord *> &contended, const Totals &totals,
                      std::uint64_t now);
    void SummaryContended(std::ostream &out, std::size_t top, const std::vector<const MonitorRecord *> &contended);
    void SummaryWaited(std::ostream &out, std::size_t top);
    void SummaryThreads(std::ostream &out, std::size_t top, std::uint64_t now);
    template <class Map>
    std::string People(const Map &map, bool withTime);
    report::Profile BuildProfile(std::size_t contended, const Totals &totals, std::uint64_t now);
    void AddMonitorTrees(report::Profile &p, FrameTable &frame);
    void AddSpans(report::Profile &p, FrameTable &frame, std::uint64_t now);
    void WriteThreadsJson(const std::string &dir, const martini::clients::OutputOptions &outOptions,
                          const std::string &runtime);
    nlohmann::json ThreadsJson() const;
    nlohmann::json MonitorsJson();

    // Whether a wait or contention beginning now on `thread` is recorded. Caller holds mutex_.
    bool Recording(TId thread) const { return !paused_.load() && pausedThreads_.count(thread) == 0; }
    ThreadRecord &Thread(TId id) {
        auto &t = threads_[id];
        t.id = id;
        return t;
    }
    MonitorRecord &Monitor(TId object, TId cls) {
        auto &m = monitors_[object];
        m.object = object;
        if (cls != 0) m.classId = cls;
        return m;
    }
    TId ClassOfObject(TId object) {
        SObjectInfo info;
        if (mpi_.GetObjectInfo(id_, object, DR_CLASS_ID, &info) == MRTE_RESULT_OK) return info.classId;
        return 0;
    }
    // Names are looked up once per class (under the lock: rare, after contention).
    std::string ClassName(TId cls) {
        if (cls == 0) return "(unknown class)";
        auto [it, added] = classNames_.emplace(cls, "");
        if (added) {
            it->second = martini::clients::GetClassName(mpi_, id_, cls);
            if (it->second.empty()) it->second = "class#" + std::to_string(cls);
        }
        return it->second;
    }
    std::string HeldBy(TId owner) {
        if (owner == 0) return "";
        const auto it = threads_.find(owner);
        return " held by " + (it != threads_.end() && !it->second.name.empty() ? it->second.name : "thread " + std::to_string(owner));
    }
    void AddSlice(TId thread, std::string label, std::uint64_t start, std::uint64_t ns, const char *category) {
        if (slices_.size() >= o_.slices) {
            ++slicesDropped_;
            return;
        }
        slices_.push_back({thread, std::move(label), start, ns, category});
    }
    std::string NameOf(TId thread) {
        const auto it = threads_.find(thread);
        return it != threads_.end() && !it->second.name.empty() ? it->second.name : report::UnnamedThreadName(thread);
    }

    IMpi &mpi_;
    TId id_;
    Options o_;
    std::mutex mutex_;  // contention and waits are slow paths already: one lock is fine
    std::map<TId, ThreadRecord> threads_;
    std::map<TId, MonitorRecord> monitors_;
    std::unordered_map<TId, std::string> classNames_;
    std::map<std::string, std::uint64_t> interactions_;
    std::vector<Slice> slices_;
    std::uint64_t slicesDropped_ = 0;
    martini::clients::OutputDirectory outputDir_;
    std::atomic<bool> paused_{false};
    std::set<TId> pausedThreads_;  // under mutex_
};

std::string Ms(std::uint64_t ns) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", double(ns) / 1e6);
    return b;
}

void ThreadProfiler::Finish() {
    mpi_.DisableEventGroup(id_, EG_MONITOR);
    Emit("");
}

void ThreadProfiler::Emit(const std::string &label) {
    std::lock_guard lock(mutex_);
    // A sample point's files are named after it; the table is printed at the end only.
    const martini::clients::OutputOptions outOptions =
        label.empty() ? o_.out : martini::clients::SamplePointOutput("threadprof", o_.out, label);
    const std::uint64_t now = gLastSeen.load();
    NameThreadsSeenByEvents();
    const std::vector<const MonitorRecord *> contended = ContendedMonitors();
    const Totals totals = SumMonitors();
    if (outOptions.top > 0) PrintSummary(outOptions.top, contended, totals, now);
    const report::Profile p = BuildProfile(contended.size(), totals, now);
    const std::string dir = outputDir_.Resolve(outOptions);
    martini::clients::WriteOutputs(p, outOptions, dir);
    if (!dir.empty() && (outOptions.formats & report::kJson)) WriteThreadsJson(dir, outOptions, p.runtime);
    std::fflush(stderr);
}

// Names for threads seen only through events.
void ThreadProfiler::NameThreadsSeenByEvents() {
    for (auto &[tid, t] : threads_) {
        if (t.name.empty()) t.name = martini::clients::GetThreadName(mpi_, id_, tid);
    }
}

// The monitors contended at least once, the longest blocked on first.
std::vector<const MonitorRecord *> ThreadProfiler::ContendedMonitors() const {
    std::vector<const MonitorRecord *> contended;
    for (const auto &[obj, m] : monitors_) {
        if (m.contentions > 0) contended.push_back(&m);
    }
    std::stable_sort(contended.begin(), contended.end(), [](auto *a, auto *b) { return a->blockedNs > b->blockedNs; });
    return contended;
}

ThreadProfiler::Totals ThreadProfiler::SumMonitors() const {
    Totals totals;
    for (const auto &[obj, m] : monitors_) {
        totals.blocked += m.blockedNs;
        totals.contentions += m.contentions;
        totals.waits += m.waited;
    }
    return totals;
}

// "NAME (COUNT[, MS ms]), ..." of a monitor's waiters or holders, the largest figure
// (time, or the count alone) first; "-" for none.
template <class Map>
std::string ThreadProfiler::People(const Map &map, bool withTime) {
    std::vector<std::pair<std::uint64_t, std::string>> rows;
    for (const auto &[tid, v] : map) {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::uint64_t>) rows.push_back({v, NameOf(tid) + " (" + std::to_string(v) + ")"});
        else rows.push_back({v.second, NameOf(tid) + " (" + std::to_string(v.first) + (withTime ? ", " + Ms(v.second) + " ms" : "") + ")"});
    }
    std::stable_sort(rows.begin(), rows.end(), [](auto &a, auto &b) { return a.first > b.first; });
    std::string s;
    for (const auto &r : rows) s += (s.empty() ? "" : ", ") + r.second;
    return s.empty() ? std::string("-") : s;
}

// The text summary on stderr: totals, then `top` rows of each table.
void ThreadProfiler::PrintSummary(std::size_t top, const std::vector<const MonitorRecord *> &contended,
                                  const Totals &totals, std::uint64_t now) {
    std::ostringstream out;
    out << "threadprof: " << threads_.size() << " threads; " << contended.size() << " contended monitors, "
        << totals.contentions << " contentions, " << Ms(totals.blocked) << " ms blocked; " << totals.waits << " waits\n";
    SummaryContended(out, top, contended);
    SummaryWaited(out, top);
    SummaryThreads(out, top, now);
    for (const auto &[type, n] : interactions_) out << "  interactions: " << type << " " << n << "\n";
    std::fputs(out.str().c_str(), stderr);
}

void ThreadProfiler::SummaryContended(std::ostream &out, std::size_t top,
                                      const std::vector<const MonitorRecord *> &contended) {
    if (!contended.empty()) out << "top contended monitors:\n";
    for (std::size_t i = 0; i < contended.size() && i < top; ++i) {
        const MonitorRecord &m = *contended[i];
        out << "  " << ClassName(m.classId) << "@" << m.object << ": " << m.contentions << " contentions, "
            << Ms(m.blockedNs) << " ms blocked (max " << Ms(m.maxBlockedNs) << " ms)\n"
            << "      waiters: " << People(m.waiters, true) << "\n"
            << "      held by: " << People(m.holders, false) << "\n";
    }
}

void ThreadProfiler::SummaryWaited(std::ostream &out, std::size_t top) {
    std::vector<const MonitorRecord *> waited;
    for (const auto &[obj, m] : monitors_) {
        if (m.waits > 0) waited.push_back(&m);
    }
    std::stable_sort(waited.begin(), waited.end(), [](auto *a, auto *b) { return a->waitingNs > b->waitingNs; });
    if (!waited.empty()) out << "monitors waited on (wait/notify):\n";
    for (std::size_t i = 0; i < waited.size() && i < top; ++i) {
        const MonitorRecord &m = *waited[i];
        out << "  " << ClassName(m.classId) << "@" << m.object << ": " << m.waits << " waits, " << m.waited
            << " woke (" << m.timeouts << " timed out), " << Ms(m.waitingNs) << " ms waiting\n";
    }
}

void ThreadProfiler::SummaryThreads(std::ostream &out, std::size_t top, std::uint64_t now) {
    out << "threads:\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-24s %-16s %12s %12s %12s\n", "name", "parent", "lifetime ms", "blocked ms",
                  "waiting ms");
    out << line;
    std::size_t shown = 0;
    for (const auto &[tid, t] : threads_) {
        if (shown++ >= top) break;
        const std::uint64_t stop = t.end != 0 ? t.end : now;
        const std::uint64_t life = t.start != 0 && stop > t.start ? stop - t.start : 0;
        std::snprintf(line, sizeof line, "  %-24s %-16s %12s %12s %12s\n", t.name.c_str(),
                      t.parent ? NameOf(t.parent).c_str() : "-", t.start ? Ms(life).c_str() : "?",
                      Ms(t.blockedNs).c_str(), Ms(t.waitingNs).c_str());
        out << line;
    }
}

// The report profile: tree thread -> state -> monitor class; spans.
report::Profile ThreadProfiler::BuildProfile(std::size_t contended, const Totals &totals, std::uint64_t now) {
    report::Profile p;
    p.tool = "threadprof";
    p.mode = "monitors";
    p.runtime = martini::clients::RuntimeName(mpi_, id_);
    p.metrics = {{"blocked", "nanoseconds"}, {"contentions", "count"}, {"waiting", "nanoseconds"}, {"waits", "count"}};
    p.defaultMetric = 0;
    FrameTable frame(p);
    AddMonitorTrees(p, frame);
    p.Merge();
    AddSpans(p, frame, now);
    p.counters = {{"threads", threads_.size()}, {"contended_monitors", contended}, {"contentions", totals.contentions},
                  {"blocked_ns", totals.blocked}, {"waits", totals.waits}, {"slices_dropped", slicesDropped_}};
    return p;
}

// One tree per thread: "blocked" and "waiting", and under each the monitors' classes.
void ThreadProfiler::AddMonitorTrees(report::Profile &p, FrameTable &frame) {
    std::map<TId, report::Tree> trees;
    auto treeOf = [&](TId tid) -> report::Tree & {
        auto [it, added] = trees.try_emplace(tid);
        if (added) {
            it->second.threadId = tid;
            it->second.threadName = NameOf(tid);
            it->second.Clear(p.metrics.size());
        }
        return it->second;
    };
    for (const auto &[obj, m] : monitors_) {
        for (const auto &[tid, w] : m.waiters) {
            report::Tree &t = treeOf(tid);
            const std::uint32_t state = t.ChildOf(0, frame("blocked"), p.metrics.size());
            const std::uint32_t n = t.ChildOf(state, frame(ClassName(m.classId)), p.metrics.size());
            t.nodes[n].self[0] += w.second;
            t.nodes[n].self[1] += w.first;
        }
    }
    for (const auto &[obj, m] : monitors_) {
        for (const auto &[tid, w] : m.waitedBy) {
            report::Tree &t = treeOf(tid);
            const std::uint32_t state = t.ChildOf(0, frame("waiting"), p.metrics.size());
            const std::uint32_t n = t.ChildOf(state, frame(ClassName(m.classId)), p.metrics.size());
            t.nodes[n].self[2] += w.second;
            t.nodes[n].self[3] += w.first;
        }
    }
    for (auto &[tid, t] : trees) p.threads.push_back(std::move(t));
}

// Chrome trace: thread lifetimes as slices on their own track, contention and waits.
void ThreadProfiler::AddSpans(report::Profile &p, FrameTable &frame, std::uint64_t now) {
    for (const auto &[tid, t] : threads_) {
        p.threadNames.push_back({tid, NameOf(tid)});
        const std::uint64_t stop = t.end != 0 ? t.end : now;
        if (t.start != 0 && stop >= t.start) p.spans.push_back({tid, frame("thread " + NameOf(tid)), t.start, stop - t.start, "thread"});
    }
    for (const Slice &s : slices_) p.spans.push_back({s.thread, frame(s.label), s.start, s.duration, s.category});
}

// The detailed JSON, NAME.threads.json.
void ThreadProfiler::WriteThreadsJson(const std::string &dir, const martini::clients::OutputOptions &outOptions,
                                      const std::string &runtime) {
    nlohmann::json j;
    j["format"] = "martini-threads";
    j["version"] = 1;
    j["runtime"] = runtime;
    j["threads"] = ThreadsJson();
    j["monitors"] = MonitorsJson();
    j["interactions"] = interactions_;
    const std::string path = (dir.back() == '/' ? dir : dir + "/") + martini::clients::ExpandOutputName(outOptions.name) + ".threads.json";
    const std::string error = martini::clients::WriteFileAtomically(path, [&](std::ostream &f) { f << j.dump(1) << '\n'; });
    if (error.empty()) std::fprintf(stderr, "threadprof: wrote %s\n", path.c_str());
    else std::fprintf(stderr, "threadprof: %s; the partial file was removed\n", error.c_str());
}

nlohmann::json ThreadProfiler::ThreadsJson() const {
    nlohmann::json threads = nlohmann::json::array();
    for (const auto &[tid, t] : threads_) {
        threads.push_back({{"id", tid}, {"name", t.name}, {"group", t.group}, {"parent", t.parent},
                           {"start_ns", t.start}, {"end_ns", t.end}, {"blocked_ns", t.blockedNs},
                           {"waiting_ns", t.waitingNs}, {"contentions", t.contentions}, {"waits", t.waits}});
    }
    return threads;
}

nlohmann::json ThreadProfiler::MonitorsJson() {
    using nlohmann::json;
    json monitors = json::array();
    for (const auto &[obj, m] : monitors_) {
        json waiters = json::array(), holders = json::array();
        for (const auto &[tid, w] : m.waiters) waiters.push_back({{"thread", tid}, {"name", NameOf(tid)}, {"count", w.first}, {"blocked_ns", w.second}});
        for (const auto &[tid, n] : m.holders) holders.push_back({{"thread", tid}, {"name", NameOf(tid)}, {"count", n}});
        monitors.push_back({{"object", obj}, {"class", ClassName(m.classId)}, {"contentions", m.contentions},
                            {"blocked_ns", m.blockedNs}, {"max_blocked_ns", m.maxBlockedNs}, {"waiters", waiters},
                            {"holders", holders}, {"waits", m.waits}, {"woke", m.waited}, {"timeouts", m.timeouts},
                            {"waiting_ns", m.waitingNs}});
    }
    return monitors;
}

struct Instance {
    template <class Base, class Data, void (ThreadProfiler::*Handler)(const Data &)>
    using Forward = martini::clients::Forward<Base, ThreadProfiler, Data, Handler>;
    ThreadProfiler profiler;
    Forward<IThreadStartEventObserver, SThreadStartEventData, &ThreadProfiler::ThreadStarted> threadStart{
        profiler, DR_THREAD_ID | DR_THREAD_NAME | DR_THREAD_GROUP | DR_THREAD_PARENT_ID | DR_CPU_TIMESTAMP};
    Forward<IThreadEndEventObserver, SThreadEndEventData, &ThreadProfiler::ThreadEnded> threadEnd{
        profiler, DR_THREAD_ID | DR_CPU_TIMESTAMP};
    Forward<IContendedMonitorEnterEventObserver, SContendedMonitorEnterEventData, &ThreadProfiler::ContentionBegins>
        contendedEnter{profiler, DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_MONITOR_OWNER_THREAD_ID | DR_CPU_TIMESTAMP};
    Forward<IContendedMonitorEnteredEventObserver, SContendedMonitorEnteredEventData, &ThreadProfiler::ContentionEnds>
        contendedEntered{profiler, DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_CPU_TIMESTAMP};
    Forward<IMonitorWaitEventObserver, SMonitorWaitEventData, &ThreadProfiler::WaitBegins> wait{
        profiler, DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_MONITOR_TIMEOUT | DR_CPU_TIMESTAMP};
    Forward<IMonitorWaitedEventObserver, SMonitorWaitedEventData, &ThreadProfiler::WaitEnds> waited{
        profiler, DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID | DR_MONITOR_TIMEOUT | DR_CPU_TIMESTAMP};
    Forward<IThreadInteractionEventObserver, SThreadInteractionEventData, &ThreadProfiler::Interaction> interaction{
        profiler, DR_THREAD_ID | DR_OBJECT_ID | DR_INTERACTION_TYPE};
    martini::clients::ForwardNoData<IVmShutdownEventObserver, ThreadProfiler, &ThreadProfiler::Finish> shutdown{profiler};
    martini::clients::OutputDirObserver outputDir{profiler.outputDirectory()};
    martini::clients::ForwardNoData<IEcStartEventObserver, ThreadProfiler, &ThreadProfiler::Resume> start{profiler};
    martini::clients::ForwardNoData<IEcStopEventObserver, ThreadProfiler, &ThreadProfiler::Pause> stop{profiler};
    Forward<IEcCustomCommandEventObserver, SEcCustomCommandEventData, &ThreadProfiler::Command> command{profiler,
                                                                                                      DR_COMMAND};
    martini::filters::RuleSet rules;
    Instance(IMpi &mpi, TId id, Options o) : profiler(mpi, id, std::move(o)) {}
};

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *options) {
    Options o;
    if (TResult r = martini::clients::ParseClientOptions("threadprof", kUsage, options, o, ParseOptions); r != MRTE_RESULT_OK) {
        return r;
    }
    auto owned = std::make_unique<Instance>(*mpi, clientId, std::move(o));
    Instance *in = owned.get();
    TResult r = mpi->RegisterEvent(clientId, in->shutdown);
    for (IEventObserver *obs : std::initializer_list<IEventObserver *>{&in->contendedEnter, &in->contendedEntered}) {
        if (r == MRTE_RESULT_OK) r = mpi->RegisterEvent(clientId, *obs);
    }
    if (r != MRTE_RESULT_OK) {
        std::fprintf(stderr, "threadprof: this runtime does not give monitor contention events (result %d)\n", int(r));
        return r;
    }
    // The rest where the runtime has them.
    for (IEventObserver *obs : std::initializer_list<IEventObserver *>{&in->threadStart, &in->threadEnd, &in->wait,
                                                                       &in->waited, &in->interaction, &in->outputDir,
                                                                       &in->start, &in->stop, &in->command}) {
        mpi->RegisterEvent(clientId, *obs);
    }
    if (!in->profiler.options().filter.empty()) {
        r = martini::filters::Install(in->rules, in->profiler.options().filter, *mpi, clientId, EG_MONITOR, "threadprof");
        if (r != MRTE_RESULT_OK) return r;
    }
    owned.release();
    return MRTE_RESULT_OK;
}

// For `martini run` and `martini attach`: the options checked before the program starts
// (martini/clients/option_names.h).
extern "C" API_EXPORT const char *MPICL_CheckOptions(const char *options) {
    return martini::clients::CheckOptions<Options>(options, ParseOptions, kUsage);
}
