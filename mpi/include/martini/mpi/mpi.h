// Martini Profiling Interface: IMpi, the interface a client calls.
//
// Phases: INSTANTIATE (inside MPICL_Instantiate), INIT (after instantiate, before the
// VmInit event), LIVE (from VmInit until VmShutdown returns), DEAD (after).
//
// Threading: every function may be called from any thread and from inside an event
// handler unless its comment says otherwise. Functions never throw (noexcept): a
// failure is a TResult (MRTE_ERROR_OUT_OF_MEMORY when memory ran out).
#pragma once

#include "martini/mpi/base.h"
#include "martini/mpi/data_requests.h"
#include "martini/mpi/events.h"
#include "martini/mpi/filters.h"

namespace Martini {
namespace MPI {

// The clock SampleHit's rate counts (IMpi::SetSamplingRate, since MPI 2.3): SC_CPU,
// per thread, the CPU time it uses (a thread that does not run is not sampled);
// SC_WALL, wall-clock time, for every runtime thread (sleeping, waiting and blocked
// ones too).
enum ESamplingClock { SC_CPU = 1, SC_WALL = 2 };
inline constexpr unsigned int kDefaultSamplingHz = 100;
inline constexpr unsigned int kMaxSamplingHz = 10000;

class IMpi {
public:
    // -- Registration (phase INSTANTIATE only, on the thread running MPICL_Instantiate)

    // Registers `observer` for the event it implements (observer.Type()). The observer
    // must outlive the runtime. EventDataTypes() is read now.
    // MRTE_RESULT_OK; MRTE_ERROR_ILLEGAL_ID (unknown clientId);
    // MRTE_ERROR_PHASE_FAILURE (outside MPICL_Instantiate of this client);
    // MRTE_ERROR_NOT_SUPPORTED (the runtime cannot raise this event);
    // MRTE_ERROR_ILLEGAL_ARGUMENT (observer already registered, or unknown type);
    // MRTE_ERROR_FAIL (EventDataTypes() threw).
    virtual TResult RegisterEvent(TId clientId, IEventObserver &observer) noexcept = 0;

    // Restricts `group`'s events for this client to the elements `filter` accepts.
    // One filter per client and group; the filter must outlive the runtime.
    // MRTE_RESULT_OK; MRTE_ERROR_ILLEGAL_ID; MRTE_ERROR_PHASE_FAILURE (outside
    // MPICL_Instantiate); MRTE_ERROR_ILLEGAL_ARGUMENT (filter.Group() != group, or a
    // filter is already set); MRTE_ERROR_NOT_SUPPORTED (group has no filters).
    virtual TResult SetEventGroupFilter(TId clientId, TEventGroup group,
                                        IEventFilter &filter) noexcept = 0;

    // -- Event groups (any phase from INSTANTIATE on, any thread, inside handlers too)

    // Starts/stops delivering `group`'s events to this client. Groups start enabled;
    // a client may disable a group inside MPICL_Instantiate to start with it off.
    // Takes effect for the next event raised on any thread. Events raised while the
    // group is disabled are not delivered to this client, so frames that straddle a
    // toggle show only their MethodLeave (disabled at enter) or only their MethodEnter
    // (disabled at leave): a client that keeps call stacks must tolerate both. While
    // the group stays enabled, every leave pairs with its enter, in order, per thread.
    // MRTE_RESULT_OK; MRTE_ERROR_ILLEGAL_ID; MRTE_ERROR_ILLEGAL_ARGUMENT (EG_NONE or
    // unknown group).
    virtual TResult EnableEventGroup(TId clientId, TEventGroup group) noexcept = 0;
    virtual TResult DisableEventGroup(TId clientId, TEventGroup group) noexcept = 0;

    // -- Data requests (phase LIVE; any thread; inside handlers too)
    //
    // Each fills *pData with the items in requestedDataTypes and sets pData->validData.
    // MRTE_RESULT_OK: every requested item is valid.
    // MRTE_ERROR_PARTIAL_INFO: some items could not be given; see validData.
    // MRTE_ERROR_BUFFER_TOO_SHORT: a string or array did not fit (data_requests.h);
    //   the others were written; retry with the sizes Martini wrote back.
    // MRTE_ERROR_NULL_PTR: pData, or a requested item's buffer, is NULL.
    // MRTE_ERROR_ILLEGAL_ID: clientId or the element id is not valid.
    // MRTE_ERROR_NOT_SUPPORTED: an item is not one this request answers.
    // MRTE_ERROR_PHASE_FAILURE: called before VmInit or after VmShutdown.
    // MRTE_ERROR_FAIL: the runtime failed to answer.

    virtual TResult GetModuleInfo(TId clientId, TId moduleId, BitSet requestedDataTypes,
                                  SModuleInfo *pData) noexcept = 0;
    virtual TResult GetClassInfo(TId clientId, TId classId, BitSet requestedDataTypes,
                                 SClassInfo *pData) noexcept = 0;
    virtual TResult GetMethodInfo(TId clientId, TId methodId, BitSet requestedDataTypes,
                                  SMethodInfo *pData) noexcept = 0;
    virtual TResult GetObjectInfo(TId clientId, TId objectId, BitSet requestedDataTypes,
                                  SObjectInfo *pData) noexcept = 0;
    virtual TResult GetThreadInfo(TId clientId, TId threadId, BitSet requestedDataTypes,
                                  SThreadInfo *pData) noexcept = 0;
    // All live threads. uiMaxStackDepth bounds each DR_VM_CALL_STACK (0: as many as
    // each entry's stackTrace.uiSize holds). pData->entries must each be prepared
    // like a single GetThreadInfo request.
    virtual TResult GetAllThreadsInfo(TId clientId, unsigned int uiMaxStackDepth,
                                      BitSet requestedDataTypes, SThreadInfoArray *pData) noexcept = 0;
    virtual TResult GetObjectReferences(TId clientId, TId objectId, BitSet requestedDataTypes,
                                        SObjectReferenceInfo *pData) noexcept = 0;
    // The method whose compiled code contains `codeAddress`.
    virtual TResult GetCompiledMethodInfo(TId clientId, UIOP codeAddress,
                                          BitSet requestedDataTypes,
                                          SCompiledMethodInfo *pData) noexcept = 0;

    // -- Miscellaneous

    // The id of the calling thread as the runtime knows it. Any phase, any thread.
    // MRTE_RESULT_OK; MRTE_ERROR_NULL_PTR; MRTE_ERROR_ILLEGAL_ID; MRTE_ERROR_FAIL (the
    // thread is not a runtime thread).
    virtual TResult GetCurrentThreadId(TId clientId, TId *pThreadId) noexcept = 0;

    // Runtime type, name and version. Any phase. MRTE_RESULT_OK; MRTE_ERROR_NULL_PTR;
    // MRTE_ERROR_ILLEGAL_ID.
    virtual TResult GetRuntimeInfo(TId clientId, SRuntimeInfo *pInfo) noexcept = 0;

    // Suspends every runtime thread but the caller / resumes them. Phase LIVE, not
    // from inside a handler of an event raised with the VM lock held (GC events).
    // MRTE_RESULT_OK; MRTE_ERROR_ILLEGAL_ID; MRTE_ERROR_PHASE_FAILURE;
    // MRTE_ERROR_NOT_SUPPORTED; MRTE_ERROR_FAIL.
    virtual TResult SuspendVM(TId clientId) noexcept = 0;
    virtual TResult ResumeVM(TId clientId) noexcept = 0;

    // Forces a full garbage collection. Phase LIVE, not from a GC event handler.
    // Same results as SuspendVM.
    virtual TResult RunGC(TId clientId) noexcept = 0;

    // MARTINI_MPI_VERSION of the Martini the client runs in. Any phase.
    virtual unsigned int GetApiVersion() noexcept = 0;

    // -- Allocation sampling (since MPI 2.2)

    // Asks the runtime to raise ObjectAlloc for about one allocation in every `bytes`
    // bytes a thread allocates (the JVM: JVMTI SetHeapSamplingInterval; each sample
    // stands for ~bytes / size allocations of its size). 0 asks for every allocation.
    // The interval is the runtime's, shared by all clients: the smallest any client
    // asked for wins. Any phase, any thread.
    // MRTE_RESULT_OK; MRTE_ERROR_ILLEGAL_ID; MRTE_ERROR_NOT_SUPPORTED (the runtime's
    // allocation events are not sampled, or there are none).
    virtual TResult SetAllocationSamplingInterval(TId clientId, unsigned int bytes) noexcept = 0;

    // -- Execution sampling (since MPI 2.3)

    // Asks the runtime to raise SampleHit for each thread about `hz` times per second
    // of `clock`. Without a call, a client that registers SampleHit gets
    // kDefaultSamplingHz on SC_CPU. The rate is the runtime's, shared by all clients:
    // the highest any client asked for wins; the clock is the first asker's.
    // Sampling runs while SampleHit has an observer, from VmInit to VmShutdown. Any
    // phase, any thread.
    // MRTE_RESULT_OK; MRTE_ERROR_ILLEGAL_ID; MRTE_ERROR_ILLEGAL_ARGUMENT (hz is 0 or
    // above kMaxSamplingHz, or clock is neither SC_CPU nor SC_WALL);
    // MRTE_ERROR_NOT_SUPPORTED (the runtime does not sample, does not have this
    // clock, or another client already chose the other clock).
    virtual TResult SetSamplingRate(TId clientId, unsigned int hz, ESamplingClock clock) noexcept = 0;

    // -- Coverage (since MPI 2.4)

    // Asks the runtime to count, inside itself, how often each block of the methods
    // this client's EG_COVERAGE filter accepts (every method, without a filter) runs:
    // no event per block; the client reads the counts with GetCoverageInfo.
    // `items`: DR_COVERAGE_BLOCKS, optionally with DR_COVERAGE_BRANCHES and
    // DR_COVERAGE_TIME (items the runtime cannot give are left out of validData then);
    // or DR_COVERAGE_CALLS alone: each method's calls and nothing else, which a runtime
    // may count more cheaply (one count per call, not one per block).
    // Phase INSTANTIATE only.
    // MRTE_RESULT_OK; MRTE_ERROR_ILLEGAL_ID; MRTE_ERROR_PHASE_FAILURE;
    // MRTE_ERROR_ILLEGAL_ARGUMENT (neither DR_COVERAGE_BLOCKS nor DR_COVERAGE_CALLS
    // alone, or an item that is not a coverage item); MRTE_ERROR_NOT_SUPPORTED (the
    // runtime cannot count blocks, or calls alone: ask for DR_COVERAGE_BLOCKS then).
    virtual TResult RequestCoverage(TId clientId, BitSet items) noexcept = 0;

    // The ids of the methods covered for this client so far, in id order (methods of
    // classes unloaded since are kept). Phase LIVE (VmShutdown and EcDetach handlers
    // included), any thread. Results as the data requests above.
    virtual TResult GetCoveredMethods(TId clientId, SIdArray *pData) noexcept = 0;

    // The counts of one covered method, as they are now (counting goes on). Phase
    // LIVE, any thread. Results as the data requests above; MRTE_ERROR_ILLEGAL_ID also
    // when the method is not covered for this client.
    virtual TResult GetCoverageInfo(TId clientId, TId methodId, BitSet requestedDataTypes,
                                    SCoverageInfo *pData) noexcept = 0;

protected:
    ~IMpi() {}  // Martini owns the implementation; clients never delete it.
};

}  // namespace MPI
}  // namespace Martini
