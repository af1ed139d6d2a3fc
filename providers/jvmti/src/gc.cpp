#include "gc.h"

#include "jvm_support.h"

namespace martini::jvm {

GcPairing Gc::pairing_;
bool Gc::startWanted_ = false;
bool Gc::endWanted_ = false;

void Gc::SetCallbacks(jvmtiEventCallbacks &callbacks) {
    callbacks.GarbageCollectionStart = OnStart;
    callbacks.GarbageCollectionFinish = OnFinish;
}

// Both JVMTI events are on while either MPI event is wanted: the pairing needs to see
// every start and every finish.
void Gc::OnDemand(TEventType event, bool wanted) {
    if (event == EV_GC_START) startWanted_ = wanted;
    if (event == EV_GC_END) endWanted_ = wanted;
    if (event != EV_GC_START && event != EV_GC_END) return;
    const jvmtiEventMode mode = startWanted_ || endWanted_ ? JVMTI_ENABLE : JVMTI_DISABLE;
    Vm::Jvmti()->SetEventNotificationMode(mode, JVMTI_EVENT_GARBAGE_COLLECTION_START, nullptr);
    Vm::Jvmti()->SetEventNotificationMode(mode, JVMTI_EVENT_GARBAGE_COLLECTION_FINISH, nullptr);
}

TResult Gc::Run() {
    return Vm::Jvmti()->ForceGarbageCollection() == JVMTI_ERROR_NONE ? MRTE_RESULT_OK : MRTE_ERROR_FAIL;
}

void JNICALL Gc::OnStart(jvmtiEnv *) {
    if (!pairing_.Start()) return;  // nested in a collection already raised
    SGcStartEventData d;
    if (Vm::Requests(EV_GC_START, DR_CPU_TIMESTAMP)) {
        d.uiCpuTimestamp = NowNs();
        d.validData = DR_CPU_TIMESTAMP;
    }
    Vm::Core().Raise<IGcStartEventObserver>(d);
}

void JNICALL Gc::OnFinish(jvmtiEnv *) {
    if (!pairing_.Finish()) return;
    SGcEndEventData d;
    if (Vm::Requests(EV_GC_END, DR_CPU_TIMESTAMP)) {
        d.uiCpuTimestamp = NowNs();
        d.validData = DR_CPU_TIMESTAMP;
    }
    Vm::Core().Raise<IGcEndEventObserver>(d);
}

}  // namespace martini::jvm
