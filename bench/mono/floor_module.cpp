// Mono's own floors, for bench/mono_overhead.sh:
// - calls (--profile=floor, configuration mono-floor): Mono instruments every method
//   and the enter and leave callbacks do nothing. A run costs what Mono spends per
//   call before any profiler code runs (the calls into the runtime at entry and at
//   every return, the loop over loaded modules, the inlining an instrumented method
//   loses), beside the Martini module's counts.
// - samples (--profile=floor:sample, configuration mono-sample-floor): Mono's sampler at
//   1000 Hz of process CPU time (what the Martini module asks for when no client
//   chose a rate) and a sample-hit callback that does nothing: Mono's signals and its
//   stack walk in the handler, beside the Martini module's SampleHit consumer.
//   LD_LIBRARY_PATH=<build>/bench mono -O=-aot --profile=floor[:sample] Program.exe
#include <mono/metadata/profiler.h>

#include <cstring>

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
void OnSampleHit(MonoProfiler *, const mono_byte *, const void *) {}

}  // namespace

extern "C" __attribute__((visibility("default"))) void mono_profiler_init_floor(const char *desc) {
    MonoProfilerHandle h = mono_profiler_create(&profiler);
    if (desc != nullptr && std::strcmp(desc, "floor:sample") == 0) {
        if (mono_profiler_enable_sampling(h)) {
            mono_profiler_set_sample_mode(h, MONO_PROFILER_SAMPLE_MODE_PROCESS, 1000);
            mono_profiler_set_sample_hit_callback(h, OnSampleHit);
        }
        return;
    }
    mono_profiler_set_call_instrumentation_filter_callback(h, Filter);
    mono_profiler_set_method_enter_callback(h, OnEnterOrLeave);
    mono_profiler_set_method_leave_callback(h, OnEnterOrLeave);
    mono_profiler_set_method_tail_call_callback(h, OnTailCall);
    mono_profiler_set_method_exception_leave_callback(h, OnExceptionLeave);
}
