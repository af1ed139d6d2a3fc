// Gc: GcStart and GcEnd from JVMTI garbage-collection events, and RunGc. No state, no
// lock: the callbacks run at a safepoint, where no JNI and no JVMTI call but raw
// monitors is allowed.
#pragma once

#include "vm.h"

namespace martini::jvm {

class Gc {
public:
    static bool Wanted() { return Vm::Wants(EV_GC_START) || Vm::Wants(EV_GC_END); }
    static void AddCapabilities(jvmtiCapabilities &caps) {
        if (Wanted()) caps.can_generate_garbage_collection_events = 1;
    }
    static void SetCallbacks(jvmtiEventCallbacks &callbacks);
    static void OnDemand(TEventType event, bool wanted);
    static TResult Run();

private:
    static void JNICALL OnStart(jvmtiEnv *);
    static void JNICALL OnFinish(jvmtiEnv *);
};

}  // namespace martini::jvm
