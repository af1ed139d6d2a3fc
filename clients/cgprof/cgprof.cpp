// cgprof: the call-graph profiler. A calling-context tree per runtime thread from
// MethodEnter/MethodLeave (calls; inclusive and exclusive wall time; thread CPU time
// where the runtime gives it), merged at the end into a top-N table on stderr and the
// files of the report library (JSON, collapsed stacks, Chrome trace, pprof, HTML).
// Written against mpi/ only: the same library runs on every runtime with a provider
// and under martini-replay.
//
// Options (comma-separated): see kUsage (options.cpp) and docs/cgprof.md. This file is
// the exact modes' event path; the trees' types are in call_tree.h, the profile built
// from them in build_profile.cpp, sample mode in sampled.cpp.
//
// Event path: one TLS lookup (cached per OS thread and runtime thread), a short scan
// of the parent's children (a hash map for nodes with many), a push or pop on the
// thread's own stack. No lock, no allocation but when the tree or stack grows;
// memory grows with distinct call paths, not with calls.
#include <MpiAPI.h>

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "martini/clients/control.h"
#include "martini/clients/output.h"
#include "martini/clients/support.h"
#include "martini/filters/rule_set.h"
#include "martini/report/profile.h"
#include "call_tree.h"
#include "options.h"
#include "sampled.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

using namespace Martini::MPI;
namespace report = martini::report;

namespace {

using cgprof::BeyondBudget;
using cgprof::CallNode;
using cgprof::Close;
using cgprof::kCpuUnknown;
using cgprof::kNone;
using cgprof::OpenCall;
using cgprof::Options;
using cgprof::SpanRecord;
using cgprof::TreeCopy;

// ---- Per-thread calling-context tree ---------------------------------------------

constexpr std::uint32_t kScanLimit = 12;  // children scanned linearly before the hash map

struct PairHash {
    std::size_t operator()(const std::pair<std::uint32_t, TId> &k) const noexcept {
        return std::hash<std::uint64_t>()(k.second * 0x9E3779B97F4A7C15ull ^ k.first);
    }
};

struct ThreadTree {
    TId threadId = 0;
    std::atomic<std::uint32_t> busy{0};  // inside a handler (read at shutdown)
    std::vector<CallNode> nodes;         // nodes[0] is the root
    std::vector<OpenCall> stack;
    std::unordered_map<std::pair<std::uint32_t, TId>, std::uint32_t, PairHash> wideChildren;
    std::uint32_t beyondDepth = 0;  // calls open beyond the depth cap
    std::uint32_t seenEpoch = 0;
    std::uint64_t lastWall = 0, lastCpu = 0;
    std::uint64_t excludedNs = 0, excludedCpuNs = 0;  // time around pauses, charged to no one
    // diagnostics
    std::uint64_t depthOverflows = 0, unmatchedLeaves = 0, unclosedByPause = 0, exceptionExits = 0;
    std::uint64_t callsBeyondBudget = 0, callsNotTraced = 0;
    std::unordered_map<TId, BeyondBudget> beyond;
    // Direct-mapped cache in front of `beyond` (past the budget every call looks up).
    // Made when a thread first goes past the budget: 64 KiB in every tree would make
    // memory follow the threads ever started instead of the profile's size.
    struct BeyondSlot {
        TId method = 0;
        BeyondBudget *entry = nullptr;
    };
    std::unique_ptr<std::array<BeyondSlot, 4096>> beyondCache;

    BeyondBudget &Beyond(TId method) {
        if (!beyondCache) beyondCache = std::make_unique<std::array<BeyondSlot, 4096>>();
        BeyondSlot &slot = (*beyondCache)[(method * 0x9E3779B97F4A7C15ull) >> 52];
        if (slot.entry != nullptr && slot.method == method) return *slot.entry;
        BeyondBudget &b = beyond[method];  // unordered_map: references stay valid
        slot = {method, &b};
        return b;
    }
    std::vector<SpanRecord> spans;
    bool heldByThreadPause = false;  // events dropped while its thread was paused
    // Time mode: the thread's CPU time at its first event, asked once (for the table's
    // threads that used CPU: Profiler::ThreadCpuTimes).
    bool cpuAsked = false;
    std::uint64_t startCpu = kCpuUnknown;

    ThreadTree() { nodes.emplace_back(); }

    // The child of `parent` for `method`: found, else created while the tree holds
    // fewer than `budget` nodes, else kNone.
    std::uint32_t Child(std::uint32_t parent, TId method, std::size_t budget) {
        CallNode &p = nodes[parent];
        if (p.childCount <= kScanLimit) {
            for (std::uint32_t c = p.firstChild; c != kNone; c = nodes[c].nextSibling) {
                if (nodes[c].method == method) return c;
            }
        } else {
            auto it = wideChildren.find({parent, method});
            if (it != wideChildren.end()) return it->second;
        }
        if (nodes.size() >= budget) return kNone;
        const auto index = static_cast<std::uint32_t>(nodes.size());
        CallNode n;
        n.method = method;
        n.parent = parent;
        n.nextSibling = nodes[parent].firstChild;
        nodes.push_back(n);
        CallNode &q = nodes[parent];  // push_back may have moved it
        q.firstChild = index;
        ++q.childCount;
        if (q.childCount == kScanLimit + 1) {
            for (std::uint32_t c = q.firstChild; c != kNone; c = nodes[c].nextSibling) wideChildren.emplace(std::pair{parent, nodes[c].method}, c);
        } else if (q.childCount > kScanLimit + 1) {
            wideChildren.emplace(std::pair{parent, method}, index);
        }
        return index;
    }
};

class Profiler;

// Marks the thread's tree busy for the duration of a handler, for the end of the run
// (Profiler::Quiesce) and for a sample point copying it from another thread
// (Profiler::Snapshot), which raises `hold` first: a handler that sees it waits. The
// handler's store of `busy` and load of `hold` need a StoreLoad fence between them to
// make that exclusion; the sample point pays for it instead, with membarrier(2), which
// runs a full barrier on every thread of the process (asymmetric Dekker: a handler's
// path keeps two plain accesses, where an exchange measured 10-25% more per event).
struct BusyScope {
    ThreadTree &t;
    BusyScope(ThreadTree &tree, const std::atomic<bool> &hold) : t(tree) {
        for (;;) {
            t.busy.store(1, std::memory_order_relaxed);
            std::atomic_signal_fence(std::memory_order_seq_cst);  // the store stays before the load
            if (!hold.load(std::memory_order_relaxed)) [[likely]] break;
            t.busy.store(0, std::memory_order_release);
            while (hold.load(std::memory_order_acquire)) std::this_thread::yield();
        }
        std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    ~BusyScope() { t.busy.store(0, std::memory_order_release); }
};

// membarrier(2): a memory barrier on every running thread of the process, for the
// sample point's side of BusyScope. The expedited command needs registering once
// (MPICL_Instantiate); without it (kernels before 4.14) the global one serves, slower.
int gMembarrierCommand = -1;
void RegisterMembarrier() {
    if (::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) {
        gMembarrierCommand = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
    } else {
        const long supported = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        if (supported > 0 && (supported & MEMBARRIER_CMD_GLOBAL) != 0) gMembarrierCommand = MEMBARRIER_CMD_GLOBAL;
    }
}
bool HeavyBarrier() {
    return gMembarrierCommand >= 0 && ::syscall(SYS_membarrier, gMembarrierCommand, 0, 0) == 0;
}

class Profiler {
public:
    Profiler(IMpi &mpi, TId id, Options options) : mpi_(mpi), id_(id), o_(std::move(options)) {
        spansLeft_.store(o_.time ? o_.trace : 0, std::memory_order_relaxed);
    }

    const Options &options() const { return o_; }
    IMpi &mpi() { return mpi_; }
    TId id() const { return id_; }

    ThreadTree &Tree(TId threadId) { return trees_.Get(threadId); }

    // A pause happened since this thread's last event: the time between its last
    // event and this one is charged to no frame (it holds the pause).
    void CheckEpoch(ThreadTree &t, std::uint64_t wall, std::uint64_t cpu) {
        const std::uint32_t epoch = epoch_.load(std::memory_order_relaxed);
        if (epoch != t.seenEpoch || t.heldByThreadPause) {
            t.seenEpoch = epoch;
            t.heldByThreadPause = false;
            if (t.lastWall != 0 && wall > t.lastWall) t.excludedNs += wall - t.lastWall;
            if (t.lastCpu != 0 && cpu > t.lastCpu) t.excludedCpuNs += cpu - t.lastCpu;
        }
        t.lastWall = wall;
        t.lastCpu = cpu;
    }

    // The thread is paused on its own (CC_THREAD_PAUSE): its events are dropped, and
    // the time until its first event after the resume is charged to no one.
    bool HeldByThreadPause(ThreadTree &t) {
        if (pausedThreadCount_.load(std::memory_order_relaxed) == 0) return false;
        std::lock_guard lock(pausedMutex_);
        if (std::find(pausedThreads_.begin(), pausedThreads_.end(), t.threadId) == pausedThreads_.end()) return false;
        t.heldByThreadPause = true;
        return true;
    }

    void Enter(TId threadId, TId method, std::uint64_t wall, std::uint64_t cpu) {
        ThreadTree &t = Tree(threadId);
        BusyScope busy(t, hold_);
        if (HeldByThreadPause(t)) return;
        if (!t.cpuAsked) [[unlikely]] {
            t.cpuAsked = true;
            if (o_.time) t.startCpu = ThreadCpu(threadId);
        }
        CheckEpoch(t, wall, cpu);
        if (t.stack.size() >= o_.depth) {
            ++t.beyondDepth;
            ++t.depthOverflows;
            return;
        }
        const std::uint32_t parent = t.stack.empty() ? 0 : t.stack.back().node;
        const std::size_t known = t.nodes.size();
        const std::uint32_t node = parent == kNone ? kNone : t.Child(parent, method, o_.nodes);
        if (o_.lines && parent != 0 && node != kNone && t.nodes.size() != known) {
            t.nodes[node].callLine = CallSiteLine(threadId, method, t.nodes[parent].method);
        }
        BeyondBudget *beyond = nullptr;
        if (node != kNone) {
            ++t.nodes[node].calls;
        } else {
            beyond = &t.Beyond(method);
            ++beyond->calls;
            ++t.callsBeyondBudget;
        }
        // The trace budget is spent when a call is entered, so a kept call's callers
        // (entered before it) are kept too, and every kept call closes at its end.
        bool traced = false;
        if (o_.time && o_.trace > 0) {
            traced = spansLeft_.load(std::memory_order_relaxed) > 0 && spansLeft_.fetch_sub(1, std::memory_order_relaxed) > 0;
            if (!traced) ++t.callsNotTraced;
        }
        t.stack.push_back({node, method, beyond, wall, cpu, t.excludedNs, traced});
    }

    // The line in `caller` at which it calls `callee`, from the thread's stack: once per
    // new calling context, so the walk's cost follows the profile's size, not the calls.
    std::uint32_t CallSiteLine(TId threadId, TId callee, TId caller) {
        constexpr unsigned kFrames = 8;  // the callee is on top, below the runtime's own frames, if any
        SStackEntry frames[kFrames];
        SThreadInfo info;
        info.stackTrace.entries = frames;
        info.stackTrace.uiSize = kFrames;
        const TResult r = mpi_.GetThreadInfo(id_, threadId, DR_VM_CALL_STACK, &info);
        if (r != MRTE_RESULT_OK && r != MRTE_ERROR_BUFFER_TOO_SHORT) return 0;
        const unsigned n = std::min(kFrames, info.stackTrace.uiActualSize);
        for (unsigned i = 0; i + 1 < n; ++i) {
            if (frames[i].methodId == callee) return frames[i + 1].methodId == caller ? frames[i + 1].uiLineNumber : 0;
        }
        return 0;
    }

    void Leave(TId threadId, TId method, std::uint64_t wall, std::uint64_t cpu, bool exceptional) {
        ThreadTree &t = Tree(threadId);
        BusyScope busy(t, hold_);
        if (HeldByThreadPause(t)) return;
        CheckEpoch(t, wall, cpu);
        if (t.beyondDepth > 0) {
            --t.beyondDepth;
            return;
        }
        if (t.stack.empty()) {
            ++t.unmatchedLeaves;  // entered while paused
            return;
        }
        if (t.stack.back().method != method) {
            // Frames that straddle a pause: find the one this leave closes; inner
            // frames above it left while we were paused.
            std::size_t i = t.stack.size() - 1;
            while (i > 0 && t.stack[i - 1].method != method) --i;
            if (i == 0) {
                ++t.unmatchedLeaves;  // entered while paused
                return;
            }
            while (t.stack.size() > i) {
                Close(t, wall, cpu);
                ++t.unclosedByPause;
            }
        }
        if (exceptional) {
            if (t.stack.back().node != kNone) ++t.nodes[t.stack.back().node].exceptionExits;
            ++t.exceptionExits;
        }
        Close(t, wall, cpu);
    }

    void Pause() {
        if (paused_.exchange(true)) return;
        mpi_.DisableEventGroup(id_, EG_CALL_GRAPH);
        epoch_.fetch_add(1, std::memory_order_relaxed);
    }
    void Resume() {
        if (!paused_.exchange(false)) return;
        epoch_.fetch_add(1, std::memory_order_relaxed);
        mpi_.EnableEventGroup(id_, EG_CALL_GRAPH);
    }
    void StartPaused() {
        paused_ = true;
        epoch_.fetch_add(1, std::memory_order_relaxed);
    }

    // EcCustomCommand: sample points and per-thread pause (MPI's EControlCommand ids).
    void Command(const SEcCustomCommandEventData &d) {
        martini::clients::HandleControlCommand(
            d, [this](const std::string &label) { Snapshot(label); },
            [](const std::string &label) { martini::clients::IntervalNotKept("cgprof", label); },
            [this](TId thread, bool paused) {
                std::lock_guard lock(pausedMutex_);
                auto it = std::find(pausedThreads_.begin(), pausedThreads_.end(), thread);
                if (paused && it == pausedThreads_.end()) pausedThreads_.push_back(thread);
                if (!paused && it != pausedThreads_.end()) pausedThreads_.erase(it);
                pausedThreadCount_.store(static_cast<unsigned>(pausedThreads_.size()), std::memory_order_relaxed);
            });
    }

    // The thread's CPU time so far, from the runtime (once per thread: at its first
    // event, at its end, at the end of the run), or kCpuUnknown.
    std::uint64_t ThreadCpu(TId threadId) {
        SThreadInfo info;
        const TResult r = mpi_.GetThreadInfo(id_, threadId, DR_THREAD_CPU_TIME, &info);
        if (r != MRTE_RESULT_OK && r != MRTE_ERROR_PARTIAL_INFO) return kCpuUnknown;
        return (info.validData & DR_THREAD_CPU_TIME) ? info.uiCpuTime : kCpuUnknown;
    }

    // ThreadEnd (time mode): its CPU time while it can still be asked for.
    void ThreadEnded(const SThreadEndEventData &d) {
        const std::uint64_t cpu = ThreadCpu(d.threadId);
        if (cpu == kCpuUnknown) return;
        std::lock_guard lock(mutex_);
        endCpu_[d.threadId] = cpu;
    }

    void ThreadStarted(const SThreadStartEventData &d) {
        if (!(d.validData & DR_THREAD_NAME) || d.szThreadName == nullptr) return;
        std::lock_guard lock(mutex_);
        threadNames_[d.threadId] = d.szThreadName;
    }
    martini::clients::OutputDirectory &outputDirectory() { return outputDir_; }

    void Finish();
    // A sample point: the files as they would be written now, named <name>-<label>;
    // collection goes on.
    void Snapshot(const std::string &label);

private:
    // One thread's tree for a profile: moved out at the end, copied at a sample point
    // (under the tree's BusyScope, so no handler changes it meanwhile).
    static TreeCopy Take(ThreadTree &t, bool move) {
        TreeCopy c;
        c.threadId = t.threadId;
        c.nodes = move ? std::move(t.nodes) : t.nodes;
        c.stack = move ? std::move(t.stack) : t.stack;
        c.beyond = move ? std::move(t.beyond) : t.beyond;
        c.spans = move ? std::move(t.spans) : t.spans;
        // The open calls beyond the node budget point into the copy's own table.
        for (OpenCall &call : c.stack) {
            if (call.node == kNone) call.beyond = &c.beyond[call.method];
        }
        c.lastWall = t.lastWall;
        c.lastCpu = t.lastCpu;
        c.excludedNs = t.excludedNs;
        c.depthOverflows = t.depthOverflows;
        c.unmatchedLeaves = t.unmatchedLeaves;
        c.unclosedByPause = t.unclosedByPause;
        c.exceptionExits = t.exceptionExits;
        c.callsBeyondBudget = t.callsBeyondBudget;
        c.callsNotTraced = t.callsNotTraced;
        return c;
    }
    // Builds the profile from the trees and writes it (`label` empty: the run's end,
    // with the threads' CPU times for the table).
    void Emit(std::vector<TreeCopy> &trees, const std::string &label,
              const std::unordered_map<TId, std::uint64_t> &threadCpu = {});
    void WriteTable(const report::Profile &p, const std::unordered_map<TId, std::uint64_t> &threadCpu);
    std::unordered_map<TId, std::uint64_t> ThreadCpuTimes();

    // Stops the call-graph events and waits for handlers in flight on other threads
    // (runtimes may still run daemon threads while they shut down).
    void Quiesce() {
        mpi_.DisableEventGroup(id_, EG_CALL_GRAPH);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        trees_.ForEachOrdered([](ThreadTree &t) {
            for (int i = 0; i < 1000 && t.busy.load(std::memory_order_acquire) != 0; ++i) {
                std::this_thread::sleep_for(std::chrono::microseconds(100));
            }
        });
    }

    IMpi &mpi_;
    TId id_;
    Options o_;
    std::mutex mutex_;  // thread names, CPU times at their end
    martini::clients::PerThread<ThreadTree> trees_;
    std::unordered_map<TId, std::string> threadNames_;
    std::unordered_map<TId, std::uint64_t> endCpu_;
    martini::clients::OutputDirectory outputDir_;
    std::atomic<bool> paused_{false};
    std::atomic<std::uint32_t> epoch_{0};
    std::mutex pausedMutex_;                 // pausedThreads_
    std::vector<TId> pausedThreads_;         // paused on their own (few)
    std::atomic<unsigned> pausedThreadCount_{0};
    std::mutex snapshotMutex_;               // one sample point at a time
    std::atomic<bool> hold_{false};          // a sample point is copying the trees
    std::atomic<std::int64_t> spansLeft_{0};
};

void Profiler::Finish() {
    Quiesce();
    const std::unordered_map<TId, std::uint64_t> threadCpu = ThreadCpuTimes();
    std::vector<TreeCopy> trees;
    trees_.ForEachOrdered([&](ThreadTree &t) { trees.push_back(Take(t, true)); });
    Emit(trees, "", threadCpu);
}

// Time mode: the CPU time each thread used from its first event to its end (or to now,
// for the threads still running), where the runtime tells both.
std::unordered_map<TId, std::uint64_t> Profiler::ThreadCpuTimes() {
    std::unordered_map<TId, std::uint64_t> used;
    if (!o_.time) return used;
    std::vector<std::pair<TId, std::uint64_t>> starts;
    trees_.ForEachOrdered([&](ThreadTree &t) {
        if (t.startCpu != kCpuUnknown) starts.emplace_back(t.threadId, t.startCpu);
    });
    std::unordered_map<TId, std::uint64_t> ends;
    {
        std::lock_guard lock(mutex_);
        ends = endCpu_;
    }
    for (const auto &[thread, start] : starts) {
        auto it = ends.find(thread);
        const std::uint64_t end = it != ends.end() ? it->second : ThreadCpu(thread);
        if (end != kCpuUnknown) used[thread] = end > start ? end - start : 0;
    }
    return used;
}

void Profiler::Snapshot(const std::string &label) {
    std::lock_guard one(snapshotMutex_);
    // Handlers that start from here wait; those already running are seen busy once
    // every thread went through a barrier (BusyScope).
    hold_.store(true, std::memory_order_seq_cst);
    if (!HeavyBarrier()) {
        hold_.store(false, std::memory_order_release);
        std::fprintf(stderr, "cgprof: sample point '%s' not written: this kernel has no membarrier(2)\n",
                     label.c_str());
        return;
    }
    std::vector<TreeCopy> trees;
    trees_.ForEachOrdered([&](ThreadTree &t) {
        while (t.busy.load(std::memory_order_acquire) != 0) std::this_thread::yield();
        trees.push_back(Take(t, false));
    });
    hold_.store(false, std::memory_order_release);
    Emit(trees, label);
}

void Profiler::Emit(std::vector<TreeCopy> &trees, const std::string &label,
                    const std::unordered_map<TId, std::uint64_t> &threadCpu) {
    std::lock_guard lock(mutex_);
    const report::Profile p = cgprof::BuildProfile(trees, o_, mpi_, id_, threadNames_);
    if (!label.empty()) {
        // A sample point: its own files, named after it; the run goes on.
        const martini::clients::OutputOptions out = martini::clients::SamplePointOutput("cgprof", o_.out, label);
        martini::clients::WriteOutputs(p, out, outputDir_.Resolve(out));
        std::fflush(stderr);
        return;
    }
    if (o_.out.top > 0) WriteTable(p, threadCpu);
    if (const std::string cut = report::TraceCutNote(p); !cut.empty()) std::fprintf(stderr, "cgprof: %s\n", cut.c_str());
    martini::clients::WriteOutputs(p, o_.out, outputDir_.Resolve(o_.out));
    std::fflush(stderr);
}

// The table at the end of the run. Time mode: over the threads that used CPU when the
// runtime told the threads' CPU times (cgprof::TableOfWorkingThreads), ranked by self
// CPU with `cpu`, else by self wall.
void Profiler::WriteTable(const report::Profile &p, const std::unordered_map<TId, std::uint64_t> &threadCpu) {
    std::ostringstream table;
    const int rankBy = o_.cpu ? p.MetricIndex("cpu") : -1;
    const std::optional<report::TableThreads> shown =
        cgprof::TableOfWorkingThreads(p, threadCpu, cgprof::WhereEveryThreadIs(o_.out, outputDir_.Resolve(o_.out)));
    if (shown) report::WriteTopTable(p, table, o_.out.top, rankBy, *shown);
    else report::WriteTopTable(p, table, o_.out.top, rankBy);
    std::fputs(table.str().c_str(), stderr);
}

// ---- Observers --------------------------------------------------------------------

class EnterObserver : public IMethodEnterEventObserver {
public:
    explicit EnterObserver(Profiler &p) : p_(p), wanted_(Wanted(p.options())) {}
    static BitSet Wanted(const Options &o) {
        return DR_METHOD_ID | DR_THREAD_ID | (o.time ? DR_CPU_TIMESTAMP : 0) | (o.cpu ? DR_THREAD_CPU_TIME : 0);
    }
    BitSet EventDataTypes() override { return wanted_; }
    void HandleEvent(SMethodEnterEventData &d) override {
        p_.Enter(d.threadId, d.methodId, d.uiCpuTimestamp, d.uiThreadCpuTime);
    }

private:
    Profiler &p_;
    BitSet wanted_;
};

class LeaveObserver : public IMethodLeaveEventObserver {
public:
    explicit LeaveObserver(Profiler &p) : p_(p), wanted_(EnterObserver::Wanted(p.options())) {}
    BitSet EventDataTypes() override { return wanted_; }
    void HandleEvent(SMethodLeaveEventData &d) override {
        p_.Leave(d.threadId, d.methodId, d.uiCpuTimestamp, d.uiThreadCpuTime, d.bIsExceptionExit);
    }

private:
    Profiler &p_;
    BitSet wanted_;
};

struct Instance {
    Profiler profiler;
    EnterObserver enter{profiler};
    LeaveObserver leave{profiler};
    martini::clients::Forward<IThreadStartEventObserver, Profiler, SThreadStartEventData, &Profiler::ThreadStarted>
        threadStart{profiler, DR_THREAD_ID | DR_THREAD_NAME};
    martini::clients::Forward<IThreadEndEventObserver, Profiler, SThreadEndEventData, &Profiler::ThreadEnded> threadEnd{
        profiler, DR_THREAD_ID};
    martini::clients::ForwardNoData<IVmShutdownEventObserver, Profiler, &Profiler::Finish> shutdown{profiler};
    martini::clients::ForwardNoData<IEcStartEventObserver, Profiler, &Profiler::Resume> start{profiler};
    martini::clients::ForwardNoData<IEcStopEventObserver, Profiler, &Profiler::Pause> stop{profiler};
    martini::clients::Forward<IEcCustomCommandEventObserver, Profiler, SEcCustomCommandEventData, &Profiler::Command>
        command{profiler, DR_COMMAND};
    martini::clients::OutputDirObserver outputDir{profiler.outputDirectory()};
    martini::filters::RuleSet rules;  // asked once per method when instrumented, never per call
    Instance(IMpi &mpi, TId id, Options o) : profiler(mpi, id, std::move(o)) {}
};

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *options) {
    Options o;
    if (TResult r = martini::clients::ParseClientOptions("cgprof", cgprof::kUsage, options, o, cgprof::ParseOptions);
        r != MRTE_RESULT_OK) {
        return r;
    }
    if (o.sampleHz != 0) return cgprof::InstantiateSampled(*mpi, clientId, cgprof::SampledOptionsOf(o));
    // Kept until the process ends once instantiated (the runtime may raise events
    // until then); freed here when instantiation fails (nothing was registered then).
    auto owned = std::make_unique<Instance>(*mpi, clientId, std::move(o));
    Instance *instance = owned.get();
    const Options &opts = instance->profiler.options();
    RegisterMembarrier();
    TResult r = mpi->RegisterEvent(clientId, instance->enter);
    if (r == MRTE_RESULT_OK) r = mpi->RegisterEvent(clientId, instance->leave);
    if (r == MRTE_RESULT_OK) r = mpi->RegisterEvent(clientId, instance->shutdown);
    if (r != MRTE_RESULT_OK) {
        std::fprintf(stderr, "cgprof: this runtime does not give method enter/leave events (result %d)\n", int(r));
        return r;
    }
    // Optional: names of threads, external control, output directory.
    mpi->RegisterEvent(clientId, instance->threadStart);
    if (opts.time) mpi->RegisterEvent(clientId, instance->threadEnd);
    mpi->RegisterEvent(clientId, instance->start);
    mpi->RegisterEvent(clientId, instance->stop);
    mpi->RegisterEvent(clientId, instance->command);
    mpi->RegisterEvent(clientId, instance->outputDir);
    if (const std::string rules = cgprof::FilterRules(opts); !rules.empty()) {
        r = martini::filters::Install(instance->rules, rules, *mpi, clientId, EG_CALL_GRAPH, "cgprof");
        if (r != MRTE_RESULT_OK) return r;
    }
    if (opts.paused) {
        instance->profiler.StartPaused();
        mpi->DisableEventGroup(clientId, EG_CALL_GRAPH);
    }
    owned.release();
    return MRTE_RESULT_OK;
}
