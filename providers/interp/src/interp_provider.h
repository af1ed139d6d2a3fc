// The provider behind the interpreter C ABI (martini/interp.h): the records of what the
// interpreter registered, the threads' shadow stacks, and the answers to data requests.
// The C functions in interp_abi.cpp check their arguments and call into this class.
#pragma once

#include "martini/core/control.h"
#include "martini/core/core.h"
#include "martini/core/run.h"
#include "martini/core/thread_registry.h"
#include "martini/interp.h"

#include <tbb/concurrent_unordered_map.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace martini::interp {

using core::ClientMask;
using Martini::MPI::BitSet;
using Martini::MPI::TEventType;
using Martini::MPI::TId;
using Martini::MPI::TResult;

struct MethodRecord {
    TId id = 0;
    std::string name;
    std::string signature;
    std::string sourceFile;
    TId classId = 0;
    std::uint32_t flags = 0;
    std::vector<Martini::MPI::SLineNumberTableEntry> lines;
    ClientMask interest = 0;  // clients whose call-graph filter wants the method
    // Coverage (clients whose EG_COVERAGE interest has the method): one counter per
    // line-table row (one for a method without a line table), the interpreter's to
    // increment (martini_coverage_counters, martini_bb_count); block times in ns when
    // a client asked for DR_COVERAGE_TIME. Read with atomic loads.
    ClientMask coverage = 0;
    std::size_t blocks = 0;
    std::unique_ptr<std::uint64_t[]> counts;
    std::unique_ptr<std::uint64_t[]> timesNs;
    // The block whose row starts at `offset` (its index), or -1.
    long BlockAt(std::uint32_t offset) const noexcept;
};

struct ClassRecord {
    std::string name;
    std::string sourceFile;
    std::vector<TId> methods;
};

struct Frame {
    martini_stack_id stack;
    const MethodRecord *method;
};

// id, name, parent and alive (under the registry's lock) are core::ThreadRecordBase's.
struct ThreadRecord : core::ThreadRecordBase {
    martini_vthread handle = 0;  // the interpreter's handle of a virtual thread; 0: an OS thread
    // Set under the provider's lock; read without it by the per-OS-thread caches.
    std::atomic<bool> ended{false};
    std::vector<Frame> frames;  // outermost first
    // The block martini_bb_time opened last on this thread (closed by the next mark,
    // or when its frame exits): the method, its block, its frame's depth, the start.
    struct TimedBlock {
        const MethodRecord *method = nullptr;
        std::size_t block = 0;
        std::size_t depth = 0;
        std::uint64_t sinceNs = 0;
    } timed;

    bool Virtual() const noexcept { return handle != 0; }
};

struct CodeRecord {
    TId method = 0;
    std::uint64_t size = 0;
    std::vector<Martini::MPI::SLineNumberTableEntry> lines;
};

class InterpProvider final : public core::Provider, public core::ControlTarget {
public:
    InterpProvider(std::string runtimeName, std::string runtimeVersion);
    ~InterpProvider() override;

    // Loads the clients and starts the run (VmInit, EcSetOutputDirectory) on the
    // calling thread. Returns "" or the reason nothing could start.
    std::string Start(const martini_config &config);
    void Shutdown();
    bool Live() const noexcept { return live_.load(std::memory_order_acquire); }
    // martini_control and `martini control PID ...` (docs/control.md): one command.
    core::ControlReply Control(const std::vector<std::string> &words);
    // ---- core::ControlTarget: terminate/detach. The clients write their outputs; the
    // interpreter's later calls are still accepted, and nothing reaches a client.
    std::string Detach(core::Core &core, std::vector<std::string> &notes) noexcept override;

    // Each returns MARTINI_OK or sets the error text (the C layer prefixes the function).
    martini_status RegisterMethod(martini_method_id id, const martini_method_info &info,
                                  std::vector<Martini::MPI::SLineNumberTableEntry> lines, std::string &error);
    const MethodRecord *FindMethod(martini_method_id id) const;

    martini_status Enter(ThreadRecord &t, martini_method_id method, martini_stack_id stack, std::string &error);
    martini_status Exit(ThreadRecord &t, martini_stack_id returnedTo, std::string &error);

    // The calling OS thread's record, announced on first use (named `name` or
    // "thread-N"). Null after shutdown.
    ThreadRecord *OsThread(const char *name);
    // The virtual thread started with `handle`, or null. Without the lock when the
    // calling OS thread asked for the same handle last (an interpreter runs one
    // coroutine for many events in a row).
    ThreadRecord *FindVirtualThread(martini_vthread handle);
    martini_status StartVirtualThread(martini_vthread handle, const char *name, martini_vthread parent,
                                      std::string &error);
    martini_status EndThread(ThreadRecord &t);
    void Rename(ThreadRecord &t, const char *name);

    // Coverage: martini_wants, martini_coverage_counters, martini_bb_count, martini_bb_time.
    bool CallsWanted() const noexcept;
    bool CoverageWanted() const noexcept;
    martini_status BlockCount(martini_method_id method, std::uint32_t offset, std::uint64_t n, std::string &error);
    martini_status BlockTime(ThreadRecord &t, std::uint32_t offset, std::string &error);

    martini_status LoadCode(martini_method_id method, std::uint64_t address, std::uint64_t size,
                            std::vector<Martini::MPI::SLineNumberTableEntry> lines, std::string &error);
    martini_status UnloadCode(std::uint64_t address, std::string &error);

    // ---- core::Provider
    core::RuntimeDescription Describe() const override;
    bool CanRaise(TEventType event) const noexcept override;
    TResult DescribeClass(TId, BitSet, core::ClassFacts &) noexcept override;
    TResult DescribeMethod(TId, BitSet, core::MethodFacts &) noexcept override;
    TResult DescribeThread(TId, BitSet, unsigned maxFrames, core::ThreadFacts &) noexcept override;
    TResult ListThreads(std::vector<TId> &) noexcept override;
    TResult DescribeCompiledCode(Martini::MPI::UIOP, BitSet, core::CompiledMethodFacts &) noexcept override;
    TResult CurrentThread(TId &) noexcept override;
    BitSet CoverageItems() const noexcept override;
    TResult DescribeCoverage(TId, BitSet, core::CoverageFacts &) noexcept override;

private:
    ThreadRecord *NewThread(std::string name, TId parent, martini_vthread handle);  // under mutex_
    void AnnounceThread(const ThreadRecord &t);
    template <class Observer>  // MethodEnter or MethodLeave
    void RaiseCall(const ThreadRecord &t, const MethodRecord &m, BitSet wanted);
    void PopTo(ThreadRecord &t, std::size_t size);  // exits frames until `size` remain
    void CloseTimedBlock(ThreadRecord &t, std::uint64_t nowNs) noexcept;
    void StartCoverage(MethodRecord &m, const ClassRecord &c);
    const ThreadRecord *Current() const noexcept;
    void SetCurrent(const ThreadRecord *t) noexcept;

    const std::string runtimeName_;
    const std::string runtimeVersion_;
    const std::uint64_t generation_;  // tells this provider's thread-local state from an earlier one's
    std::unique_ptr<core::Core> core_;
    std::unique_ptr<core::Run> run_;  // core_'s run, from Start
    std::atomic<bool> live_{false};
    std::mutex controlMutex_;  // one command at a time (the FIFO's reader, martini_control)
    core::ControlChannel channel_;
    BitSet enterWanted_ = 0;
    BitSet leaveWanted_ = 0;

    // Registration state, under mutex_. Records are never freed before the provider:
    // the hot path reads them without the lock.
    mutable std::mutex mutex_;
    std::deque<MethodRecord> methodStore_;
    std::unordered_map<martini_method_id, MethodRecord *> registered_;  // from registration on
    std::deque<ClassRecord> classes_;  // class id = index + 1; references stay valid
    std::unordered_map<std::string, TId> classByName_;
    std::unordered_map<martini_vthread, ThreadRecord *> virtualThreads_;
    std::map<std::uint64_t, CodeRecord> code_;  // by start address
    // Every thread, OS and virtual (its own lock, taken inside mutex_ where both are).
    core::ThreadRegistry<ThreadRecord> threads_;

    // Lock-free lookup for martini_enter: ids below kDenseIds (an interpreter counting
    // its methods from 1) in chunks of a dense table, two loads; larger ids (addresses)
    // in a concurrent hash map.
    static constexpr std::size_t kChunk = 4096;
    static constexpr std::size_t kDenseIds = kChunk * 1024;
    void Publish(martini_method_id id, const MethodRecord *m);
    std::atomic<std::atomic<const MethodRecord *> *> dense_[kDenseIds / kChunk] = {};
    std::vector<std::unique_ptr<std::atomic<const MethodRecord *>[]>> denseStore_;  // under mutex_
    tbb::concurrent_unordered_map<martini_method_id, const MethodRecord *> methods_;
};

}  // namespace martini::interp
