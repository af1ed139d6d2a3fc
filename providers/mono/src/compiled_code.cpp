#include "compiled_code.h"

#include "calls.h"
#include "metadata.h"
#include "sampling.h"
#include "threads.h"

namespace martini::mono {

namespace {

const char *CodeBufferName(MonoProfilerCodeBufferType type) {
    switch (type) {
        case MONO_PROFILER_CODE_BUFFER_METHOD_TRAMPOLINE: return "method trampoline";
        case MONO_PROFILER_CODE_BUFFER_UNBOX_TRAMPOLINE: return "unbox trampoline";
        case MONO_PROFILER_CODE_BUFFER_IMT_TRAMPOLINE: return "IMT trampoline";
        case MONO_PROFILER_CODE_BUFFER_GENERICS_TRAMPOLINE: return "generics trampoline";
        case MONO_PROFILER_CODE_BUFFER_SPECIFIC_TRAMPOLINE: return "specific trampoline";
        case MONO_PROFILER_CODE_BUFFER_HELPER: return "helper";
        case MONO_PROFILER_CODE_BUFFER_MONITOR: return "monitor";
        case MONO_PROFILER_CODE_BUFFER_DELEGATE_INVOKE: return "delegate invoke";
        case MONO_PROFILER_CODE_BUFFER_EXCEPTION_HANDLING: return "exception handling";
        default: return "runtime code";
    }
}

}  // namespace

void CompiledCode::SetCallbacks(MonoProfilerHandle h) {
    if (Vm::Wants(EV_JITTED_METHOD_LOADED) || Calls::Wanted() || Sampling::Wanted()) {
        mono_profiler_set_jit_done_callback(h, OnJitDone);
    }
    if (Vm::Wants(EV_DYNAMIC_CODE_GENERATED)) mono_profiler_set_jit_code_buffer_callback(h, OnCodeBuffer);
}

void CompiledCode::OnJitDone(MonoProfiler *, MonoMethod *method, MonoJitInfo *jinfo) {
    // Shared generic code: jit_done names the instance (Box<string>.Get), the filter
    // saw the shared method (Box<T_REF>.Get) that the code belongs to.
    MonoMethod *compiled = mono_jit_info_get_method(jinfo);
    Calls::NoteCompiledWithoutFilter(compiled != nullptr ? compiled : method);
    // Registered here, on a runtime thread, for the sampler's delivery thread (which
    // may not call into the runtime) to find.
    if (Sampling::Wanted()) {
        Metadata::Method(method);
        if (compiled != nullptr && compiled != method) Metadata::Method(compiled);
        Sampling::NoteLines(method);
        if (compiled != nullptr && compiled != method) Sampling::NoteLines(compiled);
    }
    if (!Vm::Wants(EV_JITTED_METHOD_LOADED)) return;
    {
        // Mono raises jit_done more than once for some methods (an icall and its wrapper).
        std::lock_guard lock(mutex_);
        if (!reported_.insert(method).second) return;
    }
    const TId id = Metadata::Method(method)->id;
    const auto start = reinterpret_cast<UIOP>(mono_jit_info_get_code_start(jinfo));
    const auto size = static_cast<unsigned>(mono_jit_info_get_code_size(jinfo));
    Vm::RaiseOrQueue([id, start, size] {
        SJittedMethodLoadedEventData d;
        d.methodId = id;
        d.validData = DR_METHOD_ID;
        if (Vm::Requests(EV_JITTED_METHOD_LOADED, DR_METHOD_CODE)) {
            d.uiCodeAddress = start;
            d.uiCodeSize = size;
            d.validData |= DR_METHOD_CODE;
        }
        Vm::Core().Raise<IJittedMethodLoadedEventObserver>(d);
    });
}

void CompiledCode::OnCodeBuffer(MonoProfiler *, const mono_byte *buffer, uint64_t size,
                                MonoProfilerCodeBufferType type, const void *data) {
    if (type == MONO_PROFILER_CODE_BUFFER_METHOD) return;  // a method body: JittedMethodLoaded
    std::string name = CodeBufferName(type);
    if (type == MONO_PROFILER_CODE_BUFFER_SPECIFIC_TRAMPOLINE && data != nullptr) {
        name += std::string(" ") + static_cast<const char *>(data);
    }
    const auto start = reinterpret_cast<UIOP>(buffer);
    const auto bytes = static_cast<unsigned>(size);
    Vm::RaiseOrQueue([name = std::move(name), start, bytes] {
        SDynamicCodeGeneratedEventData d;
        const BitSet wanted = Vm::Core().RequestedData(EV_DYNAMIC_CODE_GENERATED);
        core::Put(d, wanted, DR_CODE_NAME, d.szCodeName, name.c_str());
        if (wanted & DR_METHOD_CODE) {
            d.uiCodeAddress = start;
            d.uiCodeSize = bytes;
            d.validData |= DR_METHOD_CODE;
        }
        Vm::Core().Raise<IDynamicCodeGeneratedEventObserver>(d);
    });
}

TResult CompiledCode::Describe(UIOP address, core::CompiledMethodFacts &f) {
    // Mono's JIT info table is read with the thread's hazard pointers: runtime threads only.
    ThreadContext *ctx = tContext;
    if (ctx == nullptr || ctx->ended || !Vm::Live()) return MRTE_ERROR_NOT_SUPPORTED;
    MonoDomain *domain = mono_domain_get();
    if (domain == nullptr) domain = mono_get_root_domain();
    MonoJitInfo *ji = mono_jit_info_table_find(domain, reinterpret_cast<void *>(address));
    if (ji == nullptr) return MRTE_ERROR_ILLEGAL_ID;
    MonoMethod *m = mono_jit_info_get_method(ji);
    if (m == nullptr) return MRTE_ERROR_ILLEGAL_ID;
    f.methodId = Metadata::Method(m)->id;
    f.codeAddress = reinterpret_cast<UIOP>(mono_jit_info_get_code_start(ji));
    f.codeSize = static_cast<unsigned>(mono_jit_info_get_code_size(ji));
    f.given |= DR_METHOD_ID | DR_METHOD_CODE;
    if (mono_debug_enabled()) {
        const auto nativeOffset = static_cast<uint32_t>(address - f.codeAddress);
        if (MonoDebugSourceLocation *loc = mono_debug_lookup_source_location(m, nativeOffset, domain)) {
            f.location = loc->il_offset;
            f.lineNumber = loc->row;
            f.given |= DR_LINE_NUMBER;
            mono_debug_free_source_location(loc);
        }
    }
    return MRTE_RESULT_OK;
}

}  // namespace martini::mono
