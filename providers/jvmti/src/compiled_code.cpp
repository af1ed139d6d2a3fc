#include "compiled_code.h"

#include "classes.h"
#include "jvm_support.h"
#include "sampling.h"

namespace martini::jvm {

void CompiledCode::SetCallbacks(jvmtiEventCallbacks &callbacks) {
    callbacks.CompiledMethodLoad = OnLoad;
    callbacks.CompiledMethodUnload = OnUnload;
    callbacks.DynamicCodeGenerated = OnDynamicCode;
}

void CompiledCode::OnDemand(TEventType event, bool wanted) {
    static constexpr Vm::EventSwitch kEvents[] = {
        {EV_JITTED_METHOD_LOADED, JVMTI_EVENT_COMPILED_METHOD_LOAD},
        {EV_JITTED_METHOD_UNLOADED, JVMTI_EVENT_COMPILED_METHOD_UNLOAD},
        {EV_DYNAMIC_CODE_GENERATED, JVMTI_EVENT_DYNAMIC_CODE_GENERATED},
    };
    Vm::Switch(kEvents, event, wanted);
}

void JNICALL CompiledCode::OnLoad(jvmtiEnv *, jmethodID method, jint size, const void *address, jint,
                                  const jvmtiAddrLocationMap *, const void *) {
    // Also on for Sampling (debug information at every instruction, where the code
    // is): nothing more to do unless a client wants JIT events.
    Sampling::CodeLoaded(address, size, method);
    if (!Vm::Wants(EV_JITTED_METHOD_LOADED)) return;
    const TId id = ClassRegistry::MethodIdOf(method);
    MethodRecord *m = ClassRegistry::Method(id);
    if (m == nullptr) return;
    m->codeSize.store(static_cast<unsigned>(size), std::memory_order_relaxed);
    m->codeAddress.store(reinterpret_cast<std::uintptr_t>(address), std::memory_order_release);
    SJittedMethodLoadedEventData d;
    d.methodId = id;
    d.uiCodeAddress = reinterpret_cast<UIOP>(address);
    d.uiCodeSize = static_cast<unsigned>(size);
    d.validData = DR_METHOD_ID | DR_METHOD_CODE;
    Vm::Core().Raise<IJittedMethodLoadedEventObserver>(d);
}

void JNICALL CompiledCode::OnUnload(jvmtiEnv *, jmethodID method, const void *address) {
    Sampling::CodeUnloaded(address);
    if (!Vm::Wants(EV_JITTED_METHOD_UNLOADED)) return;
    const TId id = ClassRegistry::MethodIdOf(method);
    MethodRecord *m = ClassRegistry::Method(id);
    if (m == nullptr) return;
    SJittedMethodUnloadedEventData d;
    d.methodId = id;
    d.uiCodeAddress = reinterpret_cast<UIOP>(address);
    d.uiCodeSize = m->codeSize.load(std::memory_order_relaxed);
    d.validData = DR_METHOD_ID | DR_METHOD_CODE;
    m->codeAddress.store(0, std::memory_order_release);
    Vm::Core().Raise<IJittedMethodUnloadedEventObserver>(d);
}

void JNICALL CompiledCode::OnDynamicCode(jvmtiEnv *, const char *name, const void *address, jint length) {
    Sampling::CodeLoaded(address, length, nullptr);
    if (!Vm::Wants(EV_DYNAMIC_CODE_GENERATED)) return;
    SDynamicCodeGeneratedEventData d;
    d.szCodeName = name;
    d.uiCodeAddress = reinterpret_cast<UIOP>(address);
    d.uiCodeSize = static_cast<unsigned>(length);
    d.validData = DR_CODE_NAME | DR_METHOD_CODE;
    Vm::Core().Raise<IDynamicCodeGeneratedEventObserver>(d);
}

TResult CompiledCode::Describe(UIOP address, core::CompiledMethodFacts &f) {
    const TId n = ClassRegistry::MethodCount();
    for (TId id = 1; id <= n; ++id) {
        const MethodRecord *m = ClassRegistry::Method(id);
        const auto start = m ? m->codeAddress.load(std::memory_order_acquire) : 0;
        if (start != 0 && address >= start && address < start + m->codeSize.load(std::memory_order_relaxed)) {
            f.methodId = id;
            f.codeAddress = start;
            f.codeSize = m->codeSize.load(std::memory_order_relaxed);
            f.given = DR_METHOD_ID | DR_METHOD_CODE;
            return MRTE_RESULT_OK;
        }
    }
    return MRTE_ERROR_ILLEGAL_ID;
}

}  // namespace martini::jvm
