#include "monitors.h"

#include "metadata.h"
#include "threads.h"

#include <iterator>

namespace martini::mono {

namespace {

template <class Observer, class Data>
void RaiseMonitor(MonoObject *object) {
    if (!Vm::Live() || !Vm::Core().IsEnabled(Observer::kEventType)) return;
    ThreadContext *ctx = Threads::Current();
    if (ctx == nullptr || ctx->hidden) return;
    MonoClass *k = mono_object_get_class(object);
    const TId classId = Metadata::Class(k);
    const std::string name = Metadata::ClassName(k);
    SMonitorFilterData filter{name.c_str()};
    const ClientMask interest = Vm::Core().MonitorInterest(classId, filter);
    if (interest == 0) return;
    Data d;
    d.threadId = ctx->id;
    d.objectId = static_cast<TId>(reinterpret_cast<std::uintptr_t>(object));
    d.classId = classId;
    d.validData = DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID;
    core::Put(d, Vm::Core().RequestedData(Observer::kEventType), DR_CPU_TIMESTAMP, d.uiCpuTimestamp,
              [] { return core::Clock::NowNs(); });
    Vm::Core().Raise<Observer>(d, interest);
}

}  // namespace

void Monitors::Decide() {
    waitWanted_ = Vm::Wants(EV_MONITOR_WAIT) || Vm::Wants(EV_MONITOR_WAITED);
    interactionsWanted_ = Vm::Wants(EV_THREAD_INTERACTION);
    if (ContextsWanted() && !mono_profiler_enable_call_context_introspection()) {
        core::LogLine("Mono refused call contexts; MonitorWait, MonitorWaited and ThreadInteraction will not be raised");
        waitWanted_ = interactionsWanted_ = false;
    }
}

int Monitors::WrapperFlags(MonoMethod *m, const std::string &className, const std::string &name) {
    Kind kind = Kind::kNone;
    if (className == "System.Threading.Monitor") {
        if (name == "Monitor_wait") kind = Kind::kWait;
        else if (name == "Monitor_pulse") kind = Kind::kPulse;
        else if (name == "Monitor_pulse_all") kind = Kind::kPulseAll;
    } else if (className == "System.Threading.Thread") {
        if (name == "Thread_internal" || name == "StartInternal") kind = Kind::kStart;
        else if (name == "JoinInternal") kind = Kind::kJoin;
        else if (name == "SleepInternal") kind = Kind::kSleep;
        else if (name == "InterruptInternal") kind = Kind::kInterrupt;
    }
    if (kind == Kind::kNone || (kind == Kind::kWait ? !waitWanted_ : !interactionsWanted_)) return 0;
    if (std::lock_guard lock(mutex_); KindOf(m) == Kind::kNone) {
        if (wrapperCount_ == std::size(wrappers_)) return 0;
        wrappers_[wrapperCount_] = {m, kind};
        __atomic_store_n(&wrapperCount_, wrapperCount_ + 1, __ATOMIC_RELEASE);
    }
    return FlagsOf(m);
}

int Monitors::FlagsOf(MonoMethod *m) {
    const Kind kind = KindOf(m);
    if (kind == Kind::kNone) return 0;
    int flags = MONO_PROFILER_CALL_INSTRUMENTATION_ENTER | MONO_PROFILER_CALL_INSTRUMENTATION_ENTER_CONTEXT |
                MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE | MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE;
    if (kind == Kind::kWait) flags |= MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE_CONTEXT;
    return flags;
}

Monitors::Kind Monitors::KindOf(MonoMethod *m) {
    const unsigned n = __atomic_load_n(&wrapperCount_, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; ++i) {
        if (wrappers_[i].method == m) return wrappers_[i].kind;
    }
    return Kind::kNone;
}

namespace {

// The object a context buffer holds (`this` or an object argument), freed.
MonoObject *TakeObject(void *buffer) {
    if (buffer == nullptr) return nullptr;
    MonoObject *o = *static_cast<MonoObject **>(buffer);
    mono_profiler_call_context_free_buffer(buffer);
    return o;
}

}  // namespace

void Monitors::EnterWithContext(ThreadContext &ctx, MonoMethod *m, MonoProfilerCallContext *context) {
    if (!Vm::Live() || ctx.hidden) return;
    const Kind kind = KindOf(m);
    switch (kind) {
        case Kind::kWait: {
            // Monitor_wait (object obj, int ms): ms -1 waits without a timeout.
            MonoObject *object = TakeObject(mono_profiler_call_context_get_argument(context, 0));
            std::int64_t timeout = 0;
            if (void *ms = mono_profiler_call_context_get_argument(context, 1)) {
                const std::int32_t v = *static_cast<std::int32_t *>(ms);
                timeout = v < 0 ? 0 : v;
                mono_profiler_call_context_free_buffer(ms);
            }
            ctx.waitInterest = 0;
            if (object == nullptr) return;
            MonoClass *k = mono_object_get_class(object);
            const TId classId = Metadata::Class(k);
            const std::string name = Metadata::ClassName(k);
            SMonitorFilterData filter{name.c_str()};
            const ClientMask interest = Vm::Core().MonitorInterest(classId, filter);
            ctx.waitObject = static_cast<TId>(reinterpret_cast<std::uintptr_t>(object));
            ctx.waitClass = classId;
            ctx.waitInterest = interest;
            if (interest == 0) return;
            SMonitorWaitEventData d;
            d.threadId = ctx.id;
            d.objectId = ctx.waitObject;
            d.classId = classId;
            d.validData = DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID;
            const BitSet wanted = Vm::Core().RequestedData(EV_MONITOR_WAIT);
            core::Put(d, wanted, DR_MONITOR_TIMEOUT, d.timeoutMs, timeout);
            core::Put(d, wanted, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, [] { return core::Clock::NowNs(); });
            Vm::Core().Raise<IMonitorWaitEventObserver>(d, interest);
            return;
        }
        case Kind::kPulse:
        case Kind::kPulseAll:
            RaiseInteraction(ctx, kind, TakeObject(mono_profiler_call_context_get_argument(context, 0)));
            return;
        case Kind::kStart:
        case Kind::kJoin:
        case Kind::kInterrupt:
            RaiseInteraction(ctx, kind, TakeObject(mono_profiler_call_context_get_this(context)));
            return;
        case Kind::kSleep:
            RaiseInteraction(ctx, kind, nullptr);
            return;
        case Kind::kNone:
            return;
    }
}

void Monitors::LeaveWithContext(ThreadContext &ctx, MonoMethod *m, MonoProfilerCallContext *context) {
    if (KindOf(m) != Kind::kWait || ctx.waitInterest == 0) return;
    const ClientMask interest = ctx.waitInterest;
    ctx.waitInterest = 0;
    if (!Vm::Live()) return;
    // The result is a C# bool (one byte): true when signalled, false when timed out.
    bool signalled = true;
    if (void *result = mono_profiler_call_context_get_result(context)) {
        signalled = *static_cast<std::uint8_t *>(result) != 0;
        mono_profiler_call_context_free_buffer(result);
    }
    SMonitorWaitedEventData d;
    d.threadId = ctx.id;
    d.objectId = ctx.waitObject;
    d.classId = ctx.waitClass;
    d.validData = DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID;
    const BitSet wanted = Vm::Core().RequestedData(EV_MONITOR_WAITED);
    core::Put(d, wanted, DR_MONITOR_TIMEOUT, d.bTimedOut, !signalled);
    core::Put(d, wanted, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, [] { return core::Clock::NowNs(); });
    Vm::Core().Raise<IMonitorWaitedEventObserver>(d, interest);
}

void Monitors::RaiseInteraction(ThreadContext &ctx, Kind kind, MonoObject *object) {
    if (!Vm::Core().IsEnabled(EV_THREAD_INTERACTION)) return;
    // The containing method: the innermost instrumented frame below the wrapper's own
    // that is not System.Threading's (Thread.Sleep calls SleepInternal for its caller).
    ClientMask interest = kAllClients;
    for (std::uint32_t i = ctx.depth >= 1 ? ctx.depth - 1 : 0; i > 0; --i) {
        const MethodInfo *caller = Metadata::Method(ctx.frames[i - 1].method);
        if (caller->className.rfind("System.Threading.", 0) == 0) continue;
        SThreadInteractionFilterData filter{caller->className.c_str(), caller->name.c_str(), caller->signature.c_str()};
        interest = Vm::Core().ThreadInteractionInterest(caller->id, filter);
        break;
    }
    if (interest == 0) return;
    SThreadInteractionEventData d;
    d.threadId = ctx.id;
    d.validData = DR_THREAD_ID;
    const BitSet wanted = Vm::Core().RequestedData(EV_THREAD_INTERACTION);
    switch (kind) {
        case Kind::kPulse: d.interactionType = IT_NOTIFY; break;
        case Kind::kPulseAll: d.interactionType = IT_NOTIFY_ALL; break;
        case Kind::kStart: d.interactionType = IT_START; break;
        case Kind::kJoin: d.interactionType = IT_JOIN; break;
        case Kind::kSleep: d.interactionType = IT_SLEEP; break;
        default: d.interactionType = IT_INTERRUPT; break;
    }
    d.validData |= wanted & DR_INTERACTION_TYPE;
    if (object != nullptr) {
        core::Put(d, wanted, DR_OBJECT_ID, d.objectId, static_cast<TId>(reinterpret_cast<std::uintptr_t>(object)));
        core::Put(d, wanted, DR_CLASS_ID, d.classId, [object] { return Metadata::Class(mono_object_get_class(object)); });
    }
    core::Put(d, wanted, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, [] { return core::Clock::NowNs(); });
    Vm::Core().Raise<IThreadInteractionEventObserver>(d, interest);
}

void Monitors::SetCallbacks(MonoProfilerHandle h) {
    if (Vm::Wants(EV_CONTENDED_MONITOR_ENTER)) mono_profiler_set_monitor_contention_callback(h, OnContention);
    if (Vm::Wants(EV_CONTENDED_MONITOR_ENTERED)) mono_profiler_set_monitor_acquired_callback(h, OnAcquired);
}

void Monitors::OnContention(MonoProfiler *, MonoObject *object) {
    RaiseMonitor<IContendedMonitorEnterEventObserver, SContendedMonitorEnterEventData>(object);
}

void Monitors::OnAcquired(MonoProfiler *, MonoObject *object) {
    RaiseMonitor<IContendedMonitorEnteredEventObserver, SContendedMonitorEnteredEventData>(object);
}

}  // namespace martini::mono
