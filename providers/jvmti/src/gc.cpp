#include "gc.h"

#include "jvm_support.h"

namespace martini::jvm {

void Gc::SetCallbacks(jvmtiEventCallbacks &callbacks) {
    callbacks.GarbageCollectionStart = OnStart;
    callbacks.GarbageCollectionFinish = OnFinish;
}

void Gc::OnDemand(TEventType event, bool wanted) {
    static constexpr Vm::EventSwitch kEvents[] = {
        {EV_GC_START, JVMTI_EVENT_GARBAGE_COLLECTION_START},
        {EV_GC_END, JVMTI_EVENT_GARBAGE_COLLECTION_FINISH},
    };
    Vm::Switch(kEvents, event, wanted);
}

TResult Gc::Run() {
    return Vm::Jvmti()->ForceGarbageCollection() == JVMTI_ERROR_NONE ? MRTE_RESULT_OK : MRTE_ERROR_FAIL;
}

void JNICALL Gc::OnStart(jvmtiEnv *) {
    SGcStartEventData d;
    if (Vm::Requests(EV_GC_START, DR_CPU_TIMESTAMP)) {
        d.uiCpuTimestamp = NowNs();
        d.validData = DR_CPU_TIMESTAMP;
    }
    Vm::Core().Raise<IGcStartEventObserver>(d);
}

void JNICALL Gc::OnFinish(jvmtiEnv *) {
    SGcEndEventData d;
    if (Vm::Requests(EV_GC_END, DR_CPU_TIMESTAMP)) {
        d.uiCpuTimestamp = NowNs();
        d.validData = DR_CPU_TIMESTAMP;
    }
    Vm::Core().Raise<IGcEndEventObserver>(d);
}

}  // namespace martini::jvm
