// The replay provider: plays a recorded event stream (JSON lines, docs/replay-format.md)
// through the core, as a runtime would, and answers data requests from what the trace
// declared. Deterministic: the core's tests and client writers' tests run on it
// without a runtime.
//
// Playback runs on the calling thread. Trace threads are the trace's own ids; while a
// record is played, GetCurrentThreadId answers that record's thread. Data requests are
// answered from handlers during Play, between the trace's VmInit and VmShutdown (the
// core's LIVE phase), on the playing thread.
#pragma once

#include "martini/core/core.h"
#include "martini/core/run.h"

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace martini::replay {

using core::ClientMask;
using Martini::MPI::BitSet;
using Martini::MPI::TEventType;
using Martini::MPI::TId;
using Martini::MPI::TResult;

class ReplayProvider final : public core::Provider {
public:
    struct Stats {
        std::uint64_t records = 0;
        std::uint64_t eventsRaised = 0;           // records turned into Raise calls
        std::uint64_t methods = 0;                // NewMethod records
        std::uint64_t methodsNotInstrumented = 0; // no client's filter wanted them
        std::uint64_t callsNotInstrumented = 0;   // enters of such methods (cost nothing)
    };

    ReplayProvider() = default;

    // Plays every record of `in` through `core` (which must have finished init).
    // `sourceName` names the trace in messages. Returns "" when the whole trace was
    // played, else "<sourceName>:<line>: <reason>" for the first bad record; playback
    // stops there. Either way, if the trace had started the VM and not shut it down,
    // VmShutdown is raised so that clients write what they collected.
    // The trace's VmInit makes the run live (core::Run::GoLive: the output directory
    // announced, then VmInit) and its VmShutdown ends it (core::Run::End).
    std::string Play(core::Run &run, core::Core &core, std::istream &in, const std::string &sourceName);
    std::string Play(core::Core &core, std::istream &in, const std::string &sourceName);

    const Stats &GetStats() const { return stats_; }

    // ---- core::Provider
    core::RuntimeDescription Describe() const override;
    bool CanRaise(TEventType event) const noexcept override;
    TResult DescribeModule(TId, BitSet, core::ModuleFacts &) noexcept override;
    TResult DescribeClass(TId, BitSet, core::ClassFacts &) noexcept override;
    TResult DescribeMethod(TId, BitSet, core::MethodFacts &) noexcept override;
    TResult DescribeObject(TId, BitSet, core::ObjectFacts &) noexcept override;
    TResult DescribeThread(TId, BitSet, unsigned maxFrames, core::ThreadFacts &) noexcept override;
    TResult ListThreads(std::vector<TId> &) noexcept override;
    TResult DescribeObjectReferences(TId, BitSet, core::ObjectReferenceFacts &) noexcept override;
    TResult DescribeCompiledCode(Martini::MPI::UIOP, BitSet, core::CompiledMethodFacts &) noexcept override;
    TResult CurrentThread(TId &) noexcept override;
    TResult SuspendAll() noexcept override;
    TResult ResumeAll() noexcept override;
    TResult RunGc() noexcept override;
    TResult SetAllocationSampling(unsigned bytes) noexcept override {
        allocationSampling_ = static_cast<long long>(bytes);
        return Martini::MPI::MRTE_RESULT_OK;
    }
    long long AllocationSampling() const { return allocationSampling_; }  // -1: never set
    // The trace's SampleHit records are replayed as recorded, whatever rate is asked.
    TResult SetSamplingRate(unsigned, bool) noexcept override { return Martini::MPI::MRTE_RESULT_OK; }

    // ---- What the trace declared (read by tests)
    struct Module {
        std::string name;
    };
    struct Class {
        std::string name;
        std::string sourceFile;
        TId moduleId = 0;
        std::vector<TId> methods;
        ClientMask heapInterest = 0;
        ClientMask monitorInterest = 0;
        bool monitorInterestKnown = false;
    };
    struct Method {
        std::string name;
        std::string signature;
        TId classId = 0;
        Martini::MPI::EMethodAccessType access = Martini::MPI::MAT_NONE;
        std::vector<Martini::MPI::SLineNumberTableEntry> lines;
        Martini::MPI::UIOP codeAddress = 0;
        unsigned int codeSize = 0;
        ClientMask callGraphInterest = 0;  // decided once, at NewMethod ("instrumentation")
    };
    static constexpr unsigned kUnknownLocation = ~0u;  // as SStackEntry::uiLocation
    struct Frame {
        TId methodId;
        unsigned int location;  // offset in the method, kUnknownLocation until a record says
    };
    struct Thread {
        std::string name;
        std::string group;
        TId parentId = 0;
        TId objectId = 0;
        Martini::MPI::EThreadState state = Martini::MPI::TS_RUNNING;
        std::uint64_t cpuNs = 0;
        bool cpuKnown = false;
        bool alive = true;
        std::vector<Frame> stack;  // outermost first
    };
    struct Object {
        TId classId = 0;
        std::uint64_t size = 0;
        Martini::MPI::SArrayInfo arrayInfo;
        std::vector<TId> references;
    };

    const Method *FindMethod(TId id) const;
    const Thread *FindThread(TId id) const;

private:
    class Player;
    friend class Player;

    unsigned LineFor(const Method &m, unsigned location) const;
    void StackOf(const Thread &t, unsigned maxFrames, std::vector<Martini::MPI::SStackEntry> &out) const;

    std::unordered_map<TId, Module> modules_;
    std::unordered_map<TId, Class> classes_;
    std::unordered_map<TId, Method> methods_;
    std::map<TId, Thread> threads_;  // ordered: ListThreads answers in id order
    std::unordered_map<TId, Object> objects_;
    std::map<Martini::MPI::UIOP, TId> code_;  // start address -> method
    TId currentThread_ = 0;
    bool suspended_ = false;
    std::uint64_t gcRequests_ = 0;
    Stats stats_;
    long long allocationSampling_ = -1;
};

// Trace record name for an event ("MethodEnter"), from the event catalog.
TEventType EventFromName(const std::string &name);

}  // namespace martini::replay
