// Heap: ObjectAlloc (every allocation: Mono reports each one once allocations are
// enabled at init), GcStart/GcEnd, GcMovedReferences, the object data requests and
// RunGc.
//
// Object ids are the objects' addresses: Mono moves objects, and GcMovedReferences
// carries each move as (old address, new address); a nursery address is reused after
// a collection.
//
// GC callbacks come with the world stopped (other threads suspended anywhere, maybe
// inside malloc or holding a lock of ours): they only record, into memory allocated
// beforehand, and the events are raised once the world runs again, on the thread
// that ran the collection (POST_START_WORLD_UNLOCKED).
//
// Locks: gcMutex_ serializes RunGc from threads Mono does not know.
// The move buffer is written only between a GC's stop and restart of the world (one
// GC at a time) and read after it, on the same thread.
#pragma once

#include "vm.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace martini::mono {

class Heap {
public:
    // Init: allocations must be switched on in the init function or never.
    static void Decide();
    static void SetCallbacks(MonoProfilerHandle h);

    static TResult DescribeObject(TId id, BitSet requested, core::ObjectFacts &f);
    static TResult RunGc();
    // Mono reports every allocation; an interval is emulated here with a byte count
    // per thread: one allocation is raised each time the thread's allocations since
    // the last one reach it (0: every allocation).
    static TResult SetSampling(unsigned bytes) {
        interval_.store(bytes, std::memory_order_relaxed);
        return MRTE_RESULT_OK;
    }

private:
    static void OnAllocation(MonoProfiler *, MonoObject *object);
    static void OnGcEvent(MonoProfiler *, MonoProfilerGCEvent event, uint32_t generation, mono_bool serial);
    static void OnMoves(MonoProfiler *, MonoObject *const *objects, uint64_t count);
    static void RaiseGc();
    static void FillObject(MonoObject *object, BitSet wanted, core::ObjectFacts &f);

    static inline std::atomic<unsigned> interval_{0};
    static inline bool allocWanted_ = false, gcWanted_ = false, movesWanted_ = false;
    // One collection's facts, written with the world stopped.
    static inline std::uint64_t gcStartNs_ = 0, gcEndNs_ = 0;
    static inline bool gcHappened_ = false;
    static inline std::vector<SMovedReference> moves_;  // capacity reserved outside GCs
    static inline std::size_t movesUsed_ = 0;
    static inline std::uint64_t movesLost_ = 0;
    static inline std::uint64_t movesNeeded_ = 0;

    // One collection at a time for threads Mono does not know (RunGc).
    static inline std::mutex gcMutex_;
};

}  // namespace martini::mono
