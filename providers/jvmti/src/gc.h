// Gc: GcStart and GcEnd from JVMTI garbage-collection events, properly paired (nested
// collections are one pair: gc_pairing.h), and RunGc. No lock: the callbacks run at a
// safepoint, where no JNI and no JVMTI call but raw monitors is allowed; the pairing
// is one atomic counter. startWanted_/endWanted_ change on the core's demand calls
// (one thread at a time).
#pragma once

#include "gc_pairing.h"
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

    static GcPairing pairing_;
    static bool startWanted_, endWanted_;
};

}  // namespace martini::jvm
