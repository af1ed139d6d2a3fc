#include "monitors.h"

#include "metadata.h"
#include "threads.h"

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
