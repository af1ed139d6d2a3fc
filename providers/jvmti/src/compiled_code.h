// CompiledCode: JittedMethodLoaded, JittedMethodUnloaded and DynamicCodeGenerated
// from JVMTI's compiled-method events, and GetCompiledMethodInfo (address -> method).
// The code range of each method is kept in its MethodRecord (codeAddress, codeSize:
// atomics, written here only). No lock.
#pragma once

#include "vm.h"

namespace martini::jvm {

class CompiledCode {
public:
    static bool Wanted() {
        return Vm::Wants(EV_JITTED_METHOD_LOADED) || Vm::Wants(EV_JITTED_METHOD_UNLOADED) ||
               Vm::Wants(EV_DYNAMIC_CODE_GENERATED);
    }
    static void AddCapabilities(jvmtiCapabilities &caps) {
        if (Wanted()) caps.can_generate_compiled_method_load_events = 1;
    }
    static void SetCallbacks(jvmtiEventCallbacks &callbacks);
    static void OnDemand(TEventType event, bool wanted);
    // A scan of the method table: data requests only, not an event path.
    static TResult Describe(Martini::MPI::UIOP address, core::CompiledMethodFacts &f);

private:
    static void JNICALL OnLoad(jvmtiEnv *, jmethodID method, jint size, const void *address, jint,
                               const jvmtiAddrLocationMap *, const void *);
    static void JNICALL OnUnload(jvmtiEnv *, jmethodID method, const void *address);
    static void JNICALL OnDynamicCode(jvmtiEnv *, const char *name, const void *address, jint length);
};

}  // namespace martini::jvm
