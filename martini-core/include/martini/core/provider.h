// Martini provider SPI: what a runtime vendor implements.
//
// A provider connects one runtime (a JVM through JVMTI, Mono through its profiler
// API, an interpreter, a recorded trace) to the core. It:
//   1. creates a martini::core::Core with itself, loads the clients
//      (Core::LoadClient), then calls Core::FinishInit() before raising any event;
//   2. asks the core, once per element when it instruments it, which clients want
//      it (Core::CallGraphInterest, HeapInterest, ...) and skips elements nobody wants;
//   3. raises events with Core::Raise<I...EventObserver>(data, interestedClients),
//      filling only the items Core::RequestedData(event) asks for;
//   4. answers data requests through the Describe* functions below.
//
// Nothing here names a runtime's own types: ids are Martini::MPI::TId, strings are
// std::string. See docs/provider-guide.md.
#pragma once

#include <MpiAPI.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace martini::core {

using Martini::MPI::BitSet;
using Martini::MPI::TEventType;
using Martini::MPI::TId;
using Martini::MPI::TResult;

// One bit per loaded client (bit i = client index i). At most kMaxClients clients.
using ClientMask = std::uint64_t;
inline constexpr unsigned kMaxClients = 64;
inline constexpr ClientMask kAllClients = ~ClientMask{0};

struct RuntimeDescription {
    Martini::MPI::ERuntimeType type = Martini::MPI::RT_UNKNOWN;
    std::string name;     // "OpenJDK 64-Bit Server VM"
    std::string version;  // the runtime's own version string
};

// Filling an event's data: sets `field` and marks `item` in d.validData when `wanted`
// (Core::RequestedData(event)) has it, and does nothing otherwise. A value that costs
// something to compute (a clock read, a name lookup) is passed as a callable, which is
// called only when the item is wanted:
//   Put(d, wanted, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, [] { return Clock::NowNs(); });
template <class Data, class T, class V>
void Put(Data &d, BitSet wanted, BitSet item, T &field, V &&value) {
    if ((wanted & item) == 0) return;
    if constexpr (std::is_invocable_v<V>) {
        field = value();
    } else {
        field = value;
    }
    d.validData |= item;
}

// Answers to data requests. The provider fills the items of `requested` it can and
// sets `given` to those it filled; the core copies them into the client's buffers and
// works out the MPI result code (PARTIAL_INFO, BUFFER_TOO_SHORT, ...) uniformly, so
// every provider gives the same answers for the same facts.
struct ModuleFacts {
    BitSet given = 0;
    std::string name;
};

struct ClassFacts {
    BitSet given = 0;
    std::string name;  // source form: java.util.HashMap$Node
    std::string sourceFile;
    TId moduleId = 0;
    std::vector<TId> methods;
};

struct MethodFacts {
    BitSet given = 0;
    std::string name;
    std::string signature;
    std::string className;
    std::string sourceFile;
    TId classId = 0;
    TId moduleId = 0;
    Martini::MPI::EMethodAccessType accessType = Martini::MPI::MAT_NONE;
    std::vector<Martini::MPI::SLineNumberTableEntry> lines;
    Martini::MPI::UIOP codeAddress = 0;
    unsigned int codeSize = 0;
};

struct ObjectFacts {
    BitSet given = 0;
    TId classId = 0;
    std::uint64_t size = 0;
    Martini::MPI::SArrayInfo arrayInfo;
};

struct ThreadFacts {
    BitSet given = 0;
    std::string name;
    std::string group;
    TId parentThreadId = 0;
    Martini::MPI::EThreadState state = Martini::MPI::TS_UNKNOWN;
    std::vector<Martini::MPI::SStackEntry> stack;  // innermost first
    // The whole stack's depth when `stack` holds only its innermost maxFrames frames
    // (0: stack.size()), so that a short buffer gets its exact uiActualSize.
    std::size_t stackDepth = 0;
    std::uint64_t cpuTimeNs = 0;
    TId threadObjectId = 0;
};

struct ObjectReferenceFacts {
    BitSet given = 0;
    std::vector<TId> references;
};

struct CompiledMethodFacts {
    BitSet given = 0;
    TId methodId = 0;
    Martini::MPI::UIOP codeAddress = 0;
    unsigned int codeSize = 0;
    unsigned int location = 0;
    unsigned int lineNumber = 0;
};

// A covered method's counts (IMpi::GetCoverageInfo): its blocks in offset order
// (CEK_BLOCK), then its branch outcomes in offset and outcome order (CEK_BRANCH), then
// its entries (CEK_ENTRY) where the runtime counts calls apart from the first block.
// `given` says which coverage items the entries hold; the core drops what a client
// did not ask for.
struct CoverageFacts {
    BitSet given = 0;
    std::vector<Martini::MPI::SCoverageEntry> entries;
};

// The runtime side. Every function may be called from any thread, including from
// inside an event handler on the thread that raised the event, and must not throw.
// Describe* return MRTE_RESULT_OK when the element exists (even if some items could
// not be given: leave them out of `given`), MRTE_ERROR_ILLEGAL_ID when it does not,
// MRTE_ERROR_FAIL when the runtime failed. The defaults answer "not supported".
class Provider {
public:
    virtual ~Provider() = default;

    virtual RuntimeDescription Describe() const = 0;

    // Whether the runtime can raise `event` at all. RegisterEvent for an event it
    // cannot raise returns MRTE_ERROR_NOT_SUPPORTED to the client.
    virtual bool CanRaise(TEventType event) const noexcept = 0;

    // Called (under the core's lock, from the thread that enabled or disabled a group,
    // or from FinishInit) when `event` goes from no enabled observer to at least one,
    // or back. A provider uses it to switch runtime events on and off.
    virtual void OnEventDemandChanged(TEventType /*event*/, bool /*wanted*/) noexcept {}

    virtual TResult DescribeModule(TId, BitSet, ModuleFacts &) noexcept { return NotSupported(); }
    virtual TResult DescribeClass(TId, BitSet, ClassFacts &) noexcept { return NotSupported(); }
    virtual TResult DescribeMethod(TId, BitSet, MethodFacts &) noexcept { return NotSupported(); }
    virtual TResult DescribeObject(TId, BitSet, ObjectFacts &) noexcept { return NotSupported(); }
    // maxFrames bounds the stack the provider needs to collect (0: all); a provider that
    // stops there sets ThreadFacts::stackDepth to the whole depth.
    virtual TResult DescribeThread(TId, BitSet, unsigned /*maxFrames*/, ThreadFacts &) noexcept {
        return NotSupported();
    }
    virtual TResult ListThreads(std::vector<TId> &) noexcept { return NotSupported(); }
    virtual TResult DescribeObjectReferences(TId, BitSet, ObjectReferenceFacts &) noexcept {
        return NotSupported();
    }
    virtual TResult DescribeCompiledCode(Martini::MPI::UIOP, BitSet, CompiledMethodFacts &) noexcept {
        return NotSupported();
    }
    // The runtime's id for the calling thread; MRTE_ERROR_FAIL if it is not a
    // runtime thread.
    virtual TResult CurrentThread(TId &) noexcept { return NotSupported(); }
    virtual TResult SuspendAll() noexcept { return NotSupported(); }
    virtual TResult ResumeAll() noexcept { return NotSupported(); }
    virtual TResult RunGc() noexcept { return NotSupported(); }
    // The allocation sampling interval in bytes (0: every allocation); the core passes
    // the smallest any client asked for, each time it gets smaller.
    virtual TResult SetAllocationSampling(unsigned /*bytes*/) noexcept { return NotSupported(); }
    // SampleHit's rate (IMpi::SetSamplingRate): `hz` per second of `wall` clock time
    // (else per second of each thread's CPU time). The core passes the highest rate
    // any client asked for, each time it gets higher, always with the first clock.
    // Until it is called, a provider that samples uses kDefaultSamplingHz on CPU time.
    virtual TResult SetSamplingRate(unsigned /*hz*/, bool /*wall*/) noexcept { return NotSupported(); }
    // The coverage items (DR_COVERAGE_*) the runtime can count; IMpi::RequestCoverage
    // refuses a client when DR_COVERAGE_BLOCKS is not among them. Asked during INIT.
    virtual BitSet CoverageItems() const noexcept { return 0; }
    // The counts of a method the core said is covered (Core::CoverageInterest gave a
    // non-zero mask for it), read now. MRTE_ERROR_ILLEGAL_ID for an unknown method.
    virtual TResult DescribeCoverage(TId, BitSet, CoverageFacts &) noexcept { return NotSupported(); }

private:
    static TResult NotSupported() noexcept { return Martini::MPI::MRTE_ERROR_NOT_SUPPORTED; }
};

}  // namespace martini::core
