#include "heap.h"

#include "metadata.h"
#include "threads.h"

#include <cstring>

namespace martini::mono {

namespace {

EObjectArrayType ArrayTypeOf(MonoClass *element) {
    switch (mono_type_get_type(mono_class_get_type(element))) {
        case MONO_TYPE_BOOLEAN: return OAT_BOOLEAN;
        case MONO_TYPE_I1: case MONO_TYPE_U1: return OAT_BYTE;
        case MONO_TYPE_CHAR: return OAT_CHAR;
        case MONO_TYPE_I2: case MONO_TYPE_U2: return OAT_SHORT;
        case MONO_TYPE_I4: case MONO_TYPE_U4: return OAT_INT;
        case MONO_TYPE_I8: case MONO_TYPE_U8: return OAT_LONG;
        case MONO_TYPE_R4: return OAT_FLOAT;
        case MONO_TYPE_R8: return OAT_DOUBLE;
        default: return OAT_OBJECT;
    }
}

// Managed frames of the calling thread (Mono's stack walk: works in the allocation
// callback, which Mono reaches through a wrapper), runtime wrappers left out.
struct Walk {
    std::vector<SStackEntry> frames;
    unsigned max = 0;
};

mono_bool CollectFrame(MonoMethod *m, int32_t, int32_t il, mono_bool managed, void *data) {
    auto *w = static_cast<Walk *>(data);
    if (!managed || m == nullptr) return false;
    const MethodInfo *info = Metadata::Method(m);
    if (info->wrapper) return false;
    const unsigned offset = il >= 0 ? static_cast<unsigned>(il) : ~0u;
    w->frames.push_back({info->id, offset, il >= 0 ? Metadata::LineAt(m, offset) : 0});
    return w->max != 0 && w->frames.size() >= w->max;
}

}  // namespace

void Heap::Decide() {
    allocWanted_ = Vm::Wants(EV_OBJECT_ALLOC);
    gcWanted_ = Vm::Wants(EV_GC_START) || Vm::Wants(EV_GC_END);
    movesWanted_ = Vm::Wants(EV_GC_MOVED_REFERENCES);
    if (allocWanted_ && !mono_profiler_enable_allocations()) {
        core::LogLine("Mono refused to report allocations; ObjectAlloc will not be raised");
        allocWanted_ = false;
    }
    if (movesWanted_) moves_.resize(std::size_t{1} << 18);  // a 4 MiB nursery of 16-byte objects
}

void Heap::SetCallbacks(MonoProfilerHandle h) {
    if (allocWanted_) mono_profiler_set_gc_allocation_callback(h, OnAllocation);
    if (gcWanted_ || movesWanted_) mono_profiler_set_gc_event_callback(h, OnGcEvent);
    if (movesWanted_) mono_profiler_set_gc_moves_callback(h, OnMoves);
}

void Heap::FillObject(MonoObject *object, BitSet wanted, core::ObjectFacts &f) {
    MonoClass *k = mono_object_get_class(object);
    f.classId = Metadata::Class(k);
    f.given |= DR_CLASS_ID;
    if (wanted & DR_OBJECT_SIZE) {
        f.size = mono_object_get_size(object);
        f.given |= DR_OBJECT_SIZE;
    }
    if (wanted & DR_ARRAY_INFO) {
        if (mono_class_get_rank(k) > 0) {
            f.arrayInfo.arrayType = ArrayTypeOf(mono_class_get_element_class(k));
            f.arrayInfo.uiNumElements = static_cast<unsigned>(mono_array_length(reinterpret_cast<MonoArray *>(object)));
        }
        f.given |= DR_ARRAY_INFO;
    }
}

void Heap::OnAllocation(MonoProfiler *, MonoObject *object) {
    ThreadContext *ctx = Threads::Current();
    if (ctx == nullptr || ctx->hidden || !Vm::Core().IsEnabled(EV_OBJECT_ALLOC)) return;
    // Objects the provider's own work allocates (a name lookup, a client's handler
    // calling into the runtime) are not the program's.
    if (core::tThreadState.handlerDepth != 0) return;
    const BitSet wanted = Vm::Core().RequestedData(EV_OBJECT_ALLOC);
    const unsigned interval = interval_.load(std::memory_order_relaxed);
    if (interval != 0) {
        ctx->allocatedBytes += mono_object_get_size(object);
        if (ctx->allocatedBytes < interval) return;
        ctx->allocatedBytes %= interval;
    }
    core::ObjectFacts f;
    FillObject(object, wanted, f);
    const TId classId = f.classId;
    // The heap filters, asked once per class (the core caches the answer).
    const std::string className = Metadata::ClassName(mono_object_get_class(object));
    SHeapFilterData filter{className.c_str()};
    const ClientMask interest = Vm::Core().HeapInterest(classId, filter);
    if (interest == 0) return;
    Walk walk;
    if (wanted & (DR_VM_CALL_STACK | DR_ALLOC_LOCATION)) {
        walk.max = (wanted & DR_VM_CALL_STACK) ? 0 : 1;
        core::OwnWorkScope own;
        mono_stack_walk(CollectFrame, &walk);
    }
    const TId threadId = ctx->id;
    const TId objectId = static_cast<TId>(reinterpret_cast<std::uintptr_t>(object));
    const std::uint64_t now = (wanted & DR_CPU_TIMESTAMP) ? core::Clock::NowNs() : 0;
    auto raise = [=, frames = std::move(walk.frames)]() mutable {
        SObjectAllocEventData d;
        d.threadId = threadId;
        d.objectId = objectId;
        d.classId = classId;
        d.validData = DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID;
        core::Put(d, wanted, DR_OBJECT_SIZE, d.uiObjectSize, f.size);
        core::Put(d, wanted, DR_ARRAY_INFO, d.arrayInfo, f.arrayInfo);
        core::Put(d, wanted, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, now);
        if ((wanted & DR_ALLOC_LOCATION) && !frames.empty()) {
            d.allocMethodId = frames[0].methodId;
            d.uiAllocLocation = frames[0].uiLocation;
            d.validData |= DR_ALLOC_LOCATION;
        }
        if (wanted & DR_VM_CALL_STACK) {
            d.stackTrace.entries = frames.data();
            d.stackTrace.uiSize = d.stackTrace.uiActualSize = static_cast<unsigned>(frames.size());
            d.validData |= DR_VM_CALL_STACK;
        }
        Vm::Core().Raise<IObjectAllocEventObserver>(d, interest);
    };
    if (Vm::Live()) {
        raise();
    } else {
        Vm::RaiseOrQueue(std::move(raise));
    }
}

void Heap::OnGcEvent(MonoProfiler *, MonoProfilerGCEvent event, uint32_t, mono_bool) {
    // With the world stopped from POST_STOP_WORLD to PRE_START_WORLD: record only.
    switch (event) {
        case MONO_GC_EVENT_PRE_STOP_WORLD:
            gcHappened_ = false;
            movesUsed_ = 0;
            movesNeeded_ = 0;
            break;
        case MONO_GC_EVENT_START:
            gcStartNs_ = core::Clock::NowNs();
            gcHappened_ = true;
            break;
        case MONO_GC_EVENT_END:
            gcEndNs_ = core::Clock::NowNs();
            break;
        case MONO_GC_EVENT_POST_START_WORLD_UNLOCKED:
            RaiseGc();
            break;
        default:
            break;
    }
}

void Heap::OnMoves(MonoProfiler *, MonoObject *const *objects, uint64_t count) {
    // Pairs (old, new); written into the buffer reserved beforehand, never allocating.
    for (uint64_t i = 0; i + 1 < count; i += 2) {
        ++movesNeeded_;
        if (movesUsed_ == moves_.size()) {
            ++movesLost_;
            continue;
        }
        moves_[movesUsed_++] = {static_cast<TId>(reinterpret_cast<std::uintptr_t>(objects[i])),
                                static_cast<TId>(reinterpret_cast<std::uintptr_t>(objects[i + 1]))};
    }
}

void Heap::RaiseGc() {
    // The world runs again: raise what the collection recorded, on the collecting thread.
    if (!Vm::Live()) return;
    if (gcHappened_ && gcWanted_) {
        SGcStartEventData s;
        core::Put(s, Vm::Core().RequestedData(EV_GC_START), DR_CPU_TIMESTAMP, s.uiCpuTimestamp, gcStartNs_);
        Vm::Core().Raise<IGcStartEventObserver>(s);
    }
    if (movesWanted_ && movesUsed_ > 0) {
        SGcMovedReferencesEventData m;
        m.movedReferences.entries = moves_.data();
        m.movedReferences.uiSize = m.movedReferences.uiActualSize = static_cast<unsigned>(movesUsed_);
        m.validData = DR_MOVED_REFERENCES;
        Vm::Core().Raise<IGcMovedReferencesEventObserver>(m);
        if (movesNeeded_ > moves_.size()) {
            // Room for the next collection of this size, reserved now that the world runs.
            core::LogF("%llu moved references of this collection did not fit and were not reported; "
                       "the buffer grows for the next", static_cast<unsigned long long>(movesNeeded_ - moves_.size()));
            moves_.resize(static_cast<std::size_t>(movesNeeded_) * 2);
        }
        movesUsed_ = 0;
    }
    if (gcHappened_ && gcWanted_) {
        SGcEndEventData e;
        core::Put(e, Vm::Core().RequestedData(EV_GC_END), DR_CPU_TIMESTAMP, e.uiCpuTimestamp, gcEndNs_);
        Vm::Core().Raise<IGcEndEventObserver>(e);
    }
    gcHappened_ = false;
}

TResult Heap::DescribeObject(TId id, BitSet requested, core::ObjectFacts &f) {
    // An object is only safe to read on a runtime thread, and only while the id names a
    // live object: the caller's (an id from an event of this thread, before the next GC).
    ThreadContext *ctx = tContext;
    if (id == 0) return MRTE_ERROR_ILLEGAL_ID;
    if (ctx == nullptr || !Vm::Live()) return MRTE_ERROR_NOT_SUPPORTED;
    FillObject(reinterpret_cast<MonoObject *>(static_cast<std::uintptr_t>(id)), requested, f);
    return MRTE_RESULT_OK;
}

TResult Heap::RunGc() {
    if (!Vm::RuntimeReady() || Vm::Dead()) return MRTE_ERROR_FAIL;
    ThreadContext *ctx = tContext;
    if (ctx != nullptr && !ctx->ended) {
        // A runtime thread (an event handler, a thread of the program): directly.
        mono_gc_collect(mono_gc_max_generation());
        return MRTE_RESULT_OK;
    }
    // A thread Mono does not know (calling into Mono from it aborts the process): a
    // thread of the provider's, attached to the runtime for the collection only (Mono
    // waits at exit for attached threads) and hidden from clients, collects.
    std::lock_guard lock(gcMutex_);
    std::thread([] {
        MonoThread *self = Threads::AttachOwnThread();
        mono_gc_collect(mono_gc_max_generation());  // GcStart/GcEnd raised on this thread
        Threads::DetachOwnThread(self);
    }).join();
    return MRTE_RESULT_OK;
}

}  // namespace martini::mono
