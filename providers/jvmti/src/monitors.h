// Monitors: MonitorWait, MonitorWaited, ContendedMonitorEnter and
// ContendedMonitorEntered, from JVMTI monitor events, with the monitor filters' answer
// per object class and the owner of a contended monitor (DR_MONITOR_OWNER_THREAD_ID:
// JVMTI GetObjectMonitorUsage gives the owner's java.lang.Thread, Threads maps it to
// its id by the object's tag).
//
// Locks: none of its own. The "wait raised" and "contend raised" flags are in the
// calling thread's context; class interest is cached in the class record.
#pragma once

#include "vm.h"

namespace martini::jvm {

class Monitors {
public:
    static bool Wanted() {
        return Vm::Wants(EV_MONITOR_WAIT) || Vm::Wants(EV_MONITOR_WAITED) || Vm::Wants(EV_CONTENDED_MONITOR_ENTER) ||
               Vm::Wants(EV_CONTENDED_MONITOR_ENTERED);
    }
    static bool OwnerWanted() { return Vm::Requests(EV_CONTENDED_MONITOR_ENTER, DR_MONITOR_OWNER_THREAD_ID); }
    // Also asks Threads to tag thread objects when owners are wanted.
    static void AddCapabilities(jvmtiCapabilities &caps);
    static void SetCallbacks(jvmtiEventCallbacks &callbacks);
    static void OnDemand(TEventType event, bool wanted);

private:
    static void JNICALL OnWait(jvmtiEnv *, JNIEnv *jni, jthread, jobject object, jlong timeout);
    static void JNICALL OnWaited(jvmtiEnv *, JNIEnv *jni, jthread, jobject object, jboolean timedOut);
    static void JNICALL OnContendedEnter(jvmtiEnv *, JNIEnv *jni, jthread, jobject object);
    static void JNICALL OnContendedEntered(jvmtiEnv *, JNIEnv *jni, jthread, jobject object);
    // The thread that holds `object`'s monitor now (0: none, or it let go already).
    static TId OwnerOf(JNIEnv *jni, jobject object);
};

}  // namespace martini::jvm
