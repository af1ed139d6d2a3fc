#include "monitors.h"

#include "classes.h"
#include "jvm_support.h"
#include "threads.h"

namespace martini::jvm {

void Monitors::AddCapabilities(jvmtiCapabilities &caps) {
    if (!Wanted()) return;
    caps.can_generate_monitor_events = 1;
    caps.can_tag_objects = 1;
    if (OwnerWanted()) {
        caps.can_get_monitor_info = 1;
        Threads::TrackThreadObjects();
    }
}

void Monitors::SetCallbacks(jvmtiEventCallbacks &callbacks) {
    callbacks.MonitorWait = OnWait;
    callbacks.MonitorWaited = OnWaited;
    callbacks.MonitorContendedEnter = OnContendedEnter;
    callbacks.MonitorContendedEntered = OnContendedEntered;
}

void Monitors::OnDemand(TEventType event, bool wanted) {
    static constexpr Vm::EventSwitch kEvents[] = {
        {EV_MONITOR_WAIT, JVMTI_EVENT_MONITOR_WAIT},
        {EV_MONITOR_WAITED, JVMTI_EVENT_MONITOR_WAITED},
        {EV_CONTENDED_MONITOR_ENTER, JVMTI_EVENT_MONITOR_CONTENDED_ENTER},
        {EV_CONTENDED_MONITOR_ENTERED, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED},
    };
    Vm::Switch(kEvents, event, wanted);
}

namespace {

// Fills the common monitor-event items; returns the interested clients.
template <class Data>
ClientMask MonitorData(JNIEnv *jni, jobject object, Data &d, TEventType event) {
    jclass klass = jni->GetObjectClass(object);
    d.classId = ClassRegistry::ClassIdOf(jni, klass);
    jni->DeleteLocalRef(klass);
    d.threadId = Threads::Current(jni).id;
    d.objectId = Vm::TagOf(object, true);
    d.validData = DR_THREAD_ID | DR_OBJECT_ID | DR_CLASS_ID;
    if (Vm::Requests(event, DR_CPU_TIMESTAMP)) {
        d.uiCpuTimestamp = NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    return ClassRegistry::InterestOf(d.classId, EG_MONITOR);
}

}  // namespace

void JNICALL Monitors::OnWait(jvmtiEnv *, JNIEnv *jni, jthread, jobject object, jlong timeout) {
    SMonitorWaitEventData d;
    const ClientMask mask = MonitorData(jni, object, d, EV_MONITOR_WAIT);
    d.timeoutMs = timeout;
    d.validData |= DR_MONITOR_TIMEOUT;
    Threads::Current(jni).waitRaised = true;
    Vm::Core().Raise<IMonitorWaitEventObserver>(d, mask);
}

void JNICALL Monitors::OnWaited(jvmtiEnv *, JNIEnv *jni, jthread, jobject object, jboolean timedOut) {
    ThreadContext &ctx = Threads::Current(jni);
    if (!ctx.waitRaised) return;
    ctx.waitRaised = false;
    SMonitorWaitedEventData d;
    const ClientMask mask = MonitorData(jni, object, d, EV_MONITOR_WAITED);
    d.bTimedOut = timedOut;
    d.validData |= DR_MONITOR_TIMEOUT;
    Vm::Core().Raise<IMonitorWaitedEventObserver>(d, mask);
}

TId Monitors::OwnerOf(JNIEnv *jni, jobject object) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    jvmtiMonitorUsage usage{};
    if (jvmti->GetObjectMonitorUsage(object, &usage) != JVMTI_ERROR_NONE) return 0;
    TId owner = 0;
    if (usage.owner != nullptr) {
        owner = Threads::IdOfThreadObject(usage.owner);
        jni->DeleteLocalRef(usage.owner);
    }
    for (jint i = 0; i < usage.waiter_count; ++i) jni->DeleteLocalRef(usage.waiters[i]);
    for (jint i = 0; i < usage.notify_waiter_count; ++i) jni->DeleteLocalRef(usage.notify_waiters[i]);
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(usage.waiters));
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(usage.notify_waiters));
    return owner;
}

void JNICALL Monitors::OnContendedEnter(jvmtiEnv *, JNIEnv *jni, jthread, jobject object) {
    SContendedMonitorEnterEventData d;
    const ClientMask mask = MonitorData(jni, object, d, EV_CONTENDED_MONITOR_ENTER);
    if (mask != 0 && OwnerWanted()) {
        d.ownerThreadId = OwnerOf(jni, object);
        if (d.ownerThreadId != 0) d.validData |= DR_MONITOR_OWNER_THREAD_ID;
    }
    Threads::Current(jni).contendRaised = true;
    Vm::Core().Raise<IContendedMonitorEnterEventObserver>(d, mask);
}

void JNICALL Monitors::OnContendedEntered(jvmtiEnv *, JNIEnv *jni, jthread, jobject object) {
    ThreadContext &ctx = Threads::Current(jni);
    if (!ctx.contendRaised) return;
    ctx.contendRaised = false;
    SContendedMonitorEnteredEventData d;
    const ClientMask mask = MonitorData(jni, object, d, EV_CONTENDED_MONITOR_ENTERED);
    Vm::Core().Raise<IContendedMonitorEnteredEventObserver>(d, mask);
}

}  // namespace martini::jvm
