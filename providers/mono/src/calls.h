// Calls: MethodEnter and MethodLeave through Mono's call instrumentation. Owns the
// call-instrumentation filter (the MPI ICallGraphFilter, asked once per method when
// Mono compiles it: a method no client wants gets no instrumentation at all), the
// clients' answer per method, the enter/leave/tail-call/exception-leave callbacks and
// the shadow-stack discipline that pairs them exactly per thread.
//
// Hot path (enter, leave): no lock, no allocation once the shadow stack has grown, no
// hash lookup and no runtime call while every instrumented method has the same clients
// (one call-graph client, or several with the same filter answers); with different
// answers per method, one lock-free probe of an open-addressing table keyed by method.
//
// Locks: mutex_ guards writes to the interest table (at JIT time); reads are lock-free.
#pragma once

#include "threads.h"

#include <atomic>
#include <cstdint>
#include <mutex>

namespace martini::mono {

class Calls {
public:
    // Init: some client observes MethodEnter or MethodLeave.
    static void Decide() { wanted_ = Vm::Wants(EV_METHOD_ENTER) || Vm::Wants(EV_METHOD_LEAVE); }
    static bool Wanted() { return wanted_; }
    static void SetCallbacks(MonoProfilerHandle h);

    // VmInit: events are delivered from now on; VmShutdown: no longer.
    static void SetLive(bool live) { live_.store(live ? kAllClients : 0, std::memory_order_relaxed); }

    // Closes every frame still open on `ctx`, innermost first, as exceptional exits.
    // Returns how many were closed.
    static std::uint32_t LeaveAll(ThreadContext &ctx) noexcept;

    // jit_done of a method the filter never saw: AOT code, which raises no enter/leave.
    // Counted when some client would have wanted it.
    static void NoteCompiledWithoutFilter(MonoMethod *m);
    static bool SeenByFilter(MonoMethod *m);
    static std::uint64_t AotMethodsUninstrumented() { return aotUninstrumented_.load(); }
    static std::uint64_t UnmatchedLeaves() { return unmatchedLeaves_.load(); }
    static std::uint64_t InstrumentedMethods() { return instrumented_.load(); }

private:
    static MonoProfilerCallInstrumentationFlags Filter(MonoProfiler *, MonoMethod *m);
    static void OnEnter(MonoProfiler *, MonoMethod *m, MonoProfilerCallContext *) noexcept;
    static void OnLeave(MonoProfiler *, MonoMethod *m, MonoProfilerCallContext *) noexcept;
    static void OnTailCall(MonoProfiler *, MonoMethod *m, MonoMethod *target) noexcept;
    static void OnExceptionLeave(MonoProfiler *, MonoMethod *m, MonoObject *) noexcept;
    static void EnterWrapper(ThreadContext &ctx, MonoMethod *m, MonoProfilerCallContext *context) noexcept;
    static void RaiseEnter(const ThreadContext &ctx, MonoMethod *m, ClientMask interest) noexcept;
    static void Leave(MonoMethod *m, bool exceptional) noexcept;
    static void LeaveSlow(ThreadContext &ctx, MonoMethod *m, bool exceptional) noexcept;
    static void RaiseLeave(const ThreadContext &ctx, const Frame &f, bool exceptional) noexcept;
    static void Grow(ThreadContext &ctx) noexcept;
    static ClientMask InterestOf(MonoMethod *m) noexcept;

    // Method -> clients: open addressing, keyed by the MonoMethod pointer (stable:
    // Mono never frees a method while a profiler is loaded). Never shrinks or grows;
    // methods past its capacity get no events (counted, reported).
    struct Slot {  // zero-filled pages; read and written with __atomic builtins
        MonoMethod *method;
        ClientMask interest;
    };
    static constexpr std::size_t kSlots = std::size_t{1} << 20;  // 16 MiB of address space, touched as used
    static void Store(MonoMethod *m, ClientMask interest);
    static bool Lookup(MonoMethod *m, ClientMask &interest) noexcept;
    static std::size_t Hash(MonoMethod *m) noexcept {
        return (reinterpret_cast<std::uintptr_t>(m) >> 3) * 0x9E3779B97F4A7C15ull >> 44;
    }

    static constexpr ClientMask kMixed = ~ClientMask{0};
    static inline bool wanted_ = false;
    static inline std::atomic<ClientMask> live_{0};
    // The one answer every instrumented method got so far (0: none yet), or kMixed.
    static inline std::atomic<ClientMask> uniform_{0};
    static inline std::mutex mutex_;
    static inline Slot *table_ = nullptr;  // written once in Decide's caller, before any filter
    static inline std::atomic<std::uint64_t> aotUninstrumented_{0}, unmatchedLeaves_{0}, instrumented_{0},
        tableFull_{0};
};

}  // namespace martini::mono
