// Mono's own floor for call events: a profiler module that asks Mono to instrument
// every method and does nothing in its enter and leave callbacks. What a run costs
// under it is what Mono spends per call before any profiler code runs (the calls into
// the runtime at entry and at every return, the loop over loaded modules, the
// inlining an instrumented method loses). bench/mono_overhead.sh runs it as the
// mono-floor configuration, beside the Martini module's counts:
//   LD_LIBRARY_PATH=<build>/bench mono -O=-aot --profile=floor Program.exe
#include <mono/metadata/profiler.h>

struct _MonoProfiler {
    int unused;
};

namespace {

_MonoProfiler profiler;

MonoProfilerCallInstrumentationFlags Filter(MonoProfiler *, MonoMethod *) {
    return static_cast<MonoProfilerCallInstrumentationFlags>(
        MONO_PROFILER_CALL_INSTRUMENTATION_ENTER | MONO_PROFILER_CALL_INSTRUMENTATION_LEAVE |
        MONO_PROFILER_CALL_INSTRUMENTATION_TAIL_CALL | MONO_PROFILER_CALL_INSTRUMENTATION_EXCEPTION_LEAVE);
}

void OnEnterOrLeave(MonoProfiler *, MonoMethod *, MonoProfilerCallContext *) {}
void OnTailCall(MonoProfiler *, MonoMethod *, MonoMethod *) {}
void OnExceptionLeave(MonoProfiler *, MonoMethod *, MonoObject *) {}

}  // namespace

extern "C" __attribute__((visibility("default"))) void mono_profiler_init_floor(const char *) {
    MonoProfilerHandle h = mono_profiler_create(&profiler);
    mono_profiler_set_call_instrumentation_filter_callback(h, Filter);
    mono_profiler_set_method_enter_callback(h, OnEnterOrLeave);
    mono_profiler_set_method_leave_callback(h, OnEnterOrLeave);
    mono_profiler_set_method_tail_call_callback(h, OnTailCall);
    mono_profiler_set_method_exception_leave_callback(h, OnExceptionLeave);
}
