#include "calls.h"

#include "metadata.h"
#include "monitors.h"

#include <cstdlib>

namespace martini::mono {

namespace {

template <class Data>
inline void FillTimes(Data &d, BitSet wanted) {
    if (wanted & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = core::Clock::NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    if (wanted & DR_THREAD_CPU_TIME) {
        d.uiThreadCpuTime = ThreadCpuNs();
        d.validData |= DR_THREAD_CPU_TIME;
    }
}

constexpr auto kInstrumentAll = static_cast<MonoProfilerCallInstrumentationFlags>(
    MONO_PROFILER_CALL_INSTRUMENTATION_ENTER | MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE |
    MONO_PROFILER_CALL_INSTRUMENTATION_TAIL_CALL | MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE);

}  // namespace

void Calls::SetCallbacks(MonoProfilerHandle h) {
    // Also for the runtime wrappers Monitors instruments (waits, thread interactions).
    if (!wanted_ && !Monitors::ContextsWanted()) return;
    table_ = static_cast<Slot *>(std::calloc(kSlots, sizeof(Slot)));
    mono_profiler_set_call_instrumentation_filter_callback(h, Filter);
    mono_profiler_set_method_enter_callback(h, OnEnter);
    mono_profiler_set_method_leave_callback(h, OnLeave);
    mono_profiler_set_method_tail_call_callback(h, OnTailCall);
    mono_profiler_set_method_exception_leave_callback(h, OnExceptionLeave);
}

void Calls::Store(MonoMethod *m, ClientMask interest) {
    if (table_ == nullptr) return;
    std::lock_guard lock(mutex_);
    for (std::size_t i = Hash(m), n = 0; n < kSlots; i = (i + 1) & (kSlots - 1), ++n) {
        Slot &s = table_[i];
        MonoMethod *cur = __atomic_load_n(&s.method, __ATOMIC_RELAXED);
        if (cur == m) {
            __atomic_store_n(&s.interest, interest, __ATOMIC_RELAXED);
            return;
        }
        if (cur == nullptr) {
            // The interest before the key: a reader that finds the key finds its value.
            __atomic_store_n(&s.interest, interest, __ATOMIC_RELAXED);
            __atomic_store_n(&s.method, m, __ATOMIC_RELEASE);
            return;
        }
    }
    ++tableFull_;
}

bool Calls::Lookup(MonoMethod *m, ClientMask &interest) noexcept {
    if (table_ == nullptr) return false;
    for (std::size_t i = Hash(m), n = 0; n < kSlots; i = (i + 1) & (kSlots - 1), ++n) {
        const Slot &s = table_[i];
        MonoMethod *cur = __atomic_load_n(&s.method, __ATOMIC_ACQUIRE);
        if (cur == m) {
            interest = __atomic_load_n(&s.interest, __ATOMIC_RELAXED);
            return true;
        }
        if (cur == nullptr) return false;
    }
    return false;
}

bool Calls::SeenByFilter(MonoMethod *m) {
    ClientMask ignored;
    return Lookup(m, ignored);
}

MonoProfilerCallInstrumentationFlags Calls::Filter(MonoProfiler *, MonoMethod *m) {
    // At JIT time (and when the JIT considers inlining m, and at unwind time for each
    // frame): the clients' filters are asked once per method, the core caches the
    // answer. Runs with the JIT's locks held: no managed code.
    if (Vm::Dead()) return MONO_PROFILER_CALL_INSTRUMENTATION_NONE;
    ClientMask interest = 0;
    if (Lookup(m, interest)) {
        return static_cast<MonoProfilerCallInstrumentationFlags>((interest != 0 ? kInstrumentAll : 0) |
                                                                 Monitors::FlagsOf(m));
    }
    const MethodInfo *info = Metadata::Method(m);
    const int wrapperFlags = Monitors::ContextsWanted() && !info->wrapper
                                 ? Monitors::WrapperFlags(m, info->className, info->name) : 0;
    // Runtime wrappers (runtime-invoke, delegate-invoke, ...) are Mono's, not the
    // program's; managed-to-native wrappers stand for the native method and are kept.
    if (!info->wrapper) {
        SCallGraphFilterData data{info->className.c_str(), info->name.c_str(), info->signature.c_str(), info->access};
        interest = Vm::Core().CallGraphInterest(info->id, data);
    }
    Store(m, interest);
    if (interest == 0) return static_cast<MonoProfilerCallInstrumentationFlags>(wrapperFlags);
    ++instrumented_;
    ClientMask expected = 0;
    if (!uniform_.compare_exchange_strong(expected, interest, std::memory_order_relaxed) && expected != interest) {
        uniform_.store(kMixed, std::memory_order_relaxed);
    }
    return static_cast<MonoProfilerCallInstrumentationFlags>(kInstrumentAll | wrapperFlags);
}

void Calls::NoteCompiledWithoutFilter(MonoMethod *m) {
    if (!wanted_ || SeenByFilter(m)) return;
    const MethodInfo *info = Metadata::Method(m);
    if (info->wrapper || info->native) return;
    SCallGraphFilterData data{info->className.c_str(), info->name.c_str(), info->signature.c_str(), info->access};
    const ClientMask interest = Vm::Core().CallGraphInterest(info->id, data);
    Store(m, 0);  // never instrumented; an exception_leave of its frames is dropped
    if (interest != 0) ++aotUninstrumented_;
}

inline ClientMask Calls::InterestOf(MonoMethod *m) noexcept {
    const ClientMask live = live_.load(std::memory_order_relaxed);
    const ClientMask uniform = uniform_.load(std::memory_order_relaxed);
    if (__builtin_expect(uniform != kMixed, 1)) return uniform & live;
    ClientMask interest = 0;
    Lookup(m, interest);
    return interest & live;
}

void Calls::Grow(ThreadContext &ctx) noexcept {
    const std::uint32_t capacity = ctx.capacity != 0 ? ctx.capacity * 2 : 256;
    auto *frames = static_cast<Frame *>(std::realloc(ctx.frames, sizeof(Frame) * capacity));
    if (frames == nullptr) std::abort();  // out of memory for a shadow stack: nothing sane to do
    ctx.frames = frames;
    ctx.capacity = capacity;
}

void Calls::OnEnter(MonoProfiler *, MonoMethod *m, MonoProfilerCallContext *context) noexcept {
    ThreadContext *ctx = tContext;
    if (__builtin_expect(ctx == nullptr, 0)) {
        ctx = Threads::Adopt();
        if (ctx == nullptr) return;
    }
    if (__builtin_expect(context != nullptr, 0)) {
        EnterWrapper(*ctx, m, context);
        return;
    }
    const ClientMask interest = ctx->ended ? 0 : InterestOf(m);
    if (__builtin_expect(ctx->depth == ctx->capacity, 0)) Grow(*ctx);
    ctx->frames[ctx->depth++] = Frame{m, interest};
    if (interest == 0) return;
    RaiseEnter(*ctx, m, interest);
}

void Calls::EnterWrapper(ThreadContext &ctx, MonoMethod *m, MonoProfilerCallContext *context) noexcept {
    // One of the runtime wrappers Monitors instruments with a context: its clients'
    // own answer (the uniform one need not be theirs), then its wait or interaction.
    ClientMask interest = 0;
    if (!ctx.ended) {
        Lookup(m, interest);
        interest &= live_.load(std::memory_order_relaxed);
    }
    if (ctx.depth == ctx.capacity) Grow(ctx);
    ctx.frames[ctx.depth++] = Frame{m, interest};
    if (interest != 0) RaiseEnter(ctx, m, interest);
    if (ctx.ended) return;
    try {
        Monitors::EnterWithContext(ctx, m, context);
    } catch (...) {
        // out of memory for a class name: the event is lost, the program goes on
    }
}

void Calls::RaiseEnter(const ThreadContext &ctx, MonoMethod *m, ClientMask interest) noexcept {
    // Only the items some observer asked for: when every observer asked for the same,
    // the core delivers through its plain loop.
    const BitSet wanted = Vm::Core().RequestedData(EV_METHOD_ENTER);
    SMethodEnterEventData d;
    d.methodId = Metadata::IdOf(m);
    d.threadId = ctx.id;
    d.validData = (DR_METHOD_ID | DR_THREAD_ID) & wanted;
    FillTimes(d, wanted);
    Vm::Core().Raise<IMethodEnterEventObserver>(d, interest);
}

void Calls::RaiseLeave(const ThreadContext &ctx, const Frame &f, bool exceptional) noexcept {
    const BitSet wanted = Vm::Core().RequestedData(EV_METHOD_LEAVE);
    SMethodLeaveEventData d;
    d.methodId = Metadata::IdOf(f.method);
    d.threadId = ctx.id;
    d.validData = (DR_METHOD_ID | DR_THREAD_ID) & wanted;
    d.bIsExceptionExit = exceptional;
    FillTimes(d, wanted);
    Vm::Core().Raise<IMethodLeaveEventObserver>(d, f.interest);
}

inline void Calls::Leave(MonoMethod *m, bool exceptional) noexcept {
    ThreadContext *ctx = tContext;
    if (__builtin_expect(ctx == nullptr, 0)) return;  // no enter was seen on this thread
    const std::uint32_t depth = ctx->depth;
    if (__builtin_expect(depth != 0 && ctx->frames[depth - 1].method == m, 1)) {
        const Frame f = ctx->frames[depth - 1];
        ctx->depth = depth - 1;
        if (f.interest != 0) RaiseLeave(*ctx, f, exceptional);
        return;
    }
    LeaveSlow(*ctx, m, exceptional);
}

void Calls::LeaveSlow(ThreadContext &ctx, MonoMethod *m, bool exceptional) noexcept {
    // The leave pops through to its own frame: frames above it were left without a
    // leave of their own (reported as exceptional exits, innermost first). A leave
    // whose enter was never seen (an AOT frame unwound by an exception, a method
    // compiled before the filter wanted it) is dropped.
    std::uint32_t i = ctx.depth;
    while (i > 0 && ctx.frames[i - 1].method != m) --i;
    if (i == 0) {
        unmatchedLeaves_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    while (ctx.depth >= i) {
        const Frame f = ctx.frames[ctx.depth - 1];
        --ctx.depth;
        if (f.interest != 0) RaiseLeave(ctx, f, ctx.depth + 1 != i || exceptional);
    }
}

std::uint32_t Calls::LeaveAll(ThreadContext &ctx) noexcept {
    std::uint32_t closed = 0;
    while (ctx.depth > 0) {
        const Frame f = ctx.frames[ctx.depth - 1];
        --ctx.depth;
        if (f.interest != 0) RaiseLeave(ctx, f, true);
        ++closed;
    }
    return closed;
}

void Calls::OnLeave(MonoProfiler *, MonoMethod *m, MonoProfilerCallContext *context) noexcept {
    if (__builtin_expect(context != nullptr, 0)) {
        if (ThreadContext *ctx = tContext; ctx != nullptr && !ctx->ended) {
            try {
                Monitors::LeaveWithContext(*ctx, m, context);
            } catch (...) {
            }
        }
    }
    Leave(m, false);
}
// A frame left by a CIL tail call: its leave (the target raises its own enter).
void Calls::OnTailCall(MonoProfiler *, MonoMethod *m, MonoMethod *) noexcept { Leave(m, false); }
void Calls::OnExceptionLeave(MonoProfiler *, MonoMethod *m, MonoObject *) noexcept { Leave(m, true); }

}  // namespace martini::mono
