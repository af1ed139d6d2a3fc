// Vm: the one owner of this JVM's environment for the agent's components (the
// JavaVM*, the jvmtiEnv*, the capabilities block, the core) and of what they share:
// the phase flag the probes test, and object ids (JVMTI tags, from one counter, so
// allocations, monitors, interactions and threads never hand out the same id twice).
//
// Everything here is static and written in Agent_OnLoad before any event can come,
// except `dead_` (VMDeath) and the tag counter (atomic). No lock.
#pragma once

#include "martini/core/core.h"

#include <jni.h>
#include <jvmti.h>

#include <atomic>
#include <mutex>
#include <cstddef>
#include <string>

namespace martini::jvm {

using core::ClientMask;
using namespace Martini::MPI;  // private headers: MPI's names are the provider's vocabulary

class Vm {
public:
    // Agent_OnLoad or Agent_OnAttach, first; again at each attach after a detach, with
    // the new environment (no capability yet; the probes live again).
    static void Init(JavaVM *vm, jvmtiEnv *jvmti) {
        vm_ = vm;
        jvmti_ = jvmti;
        caps_ = jvmtiCapabilities{};
        dead_.store(false, std::memory_order_release);
    }
    static void AttachCore(core::Core *core) { core_ = core; }

    static JavaVM *Java() { return vm_; }
    static jvmtiEnv *Jvmti() { return jvmti_; }
    static core::Core &Core() { return *core_; }
    static bool Wants(TEventType e) { return core_->HasObservers(e); }
    static bool Requests(TEventType e, BitSet item) { return (core_->RequestedData(e) & item) != 0; }
    // The calling thread's JNIEnv; null on a thread the JVM does not know.
    static JNIEnv *Jni();

    // Agent_OnLoad: each component sets the capabilities it needs in this block, then
    // AddCapabilities asks the JVM for them all at once. `live` (attached): only those
    // the JVM still offers in its live phase are asked for; the others are named.
    static jvmtiCapabilities &Capabilities() { return caps_; }
    static bool AddCapabilities(bool live = false);

    // OnEventDemandChanged: switches the JVMTI event behind an MPI event, from a
    // component's table of the events it owns; false when `event` is none of them.
    struct EventSwitch {
        TEventType event;
        jvmtiEvent jvmti;
    };
    template <std::size_t N>
    static bool Switch(const EventSwitch (&table)[N], TEventType event, bool wanted) {
        for (const EventSwitch &e : table) {
            if (e.event != event) continue;
            jvmti_->SetEventNotificationMode(wanted ? JVMTI_ENABLE : JVMTI_DISABLE, e.jvmti, nullptr);
            return true;
        }
        return false;
    }

    // After VMDeath the probes and hooks do nothing (relaxed: a late event may still
    // see false and be raised; the core tolerates it after VmShutdown).
    static bool Dead() { return dead_.load(std::memory_order_relaxed); }
    static void SetDead() { dead_.store(true, std::memory_order_release); }

    // The object's id: its JVMTI tag, set now when it has none and `create`. 0 when
    // the object is null or tagging fails (no can_tag_objects).
    static TId TagOf(jobject object, bool create);


private:
    static inline JavaVM *vm_ = nullptr;
    static inline jvmtiEnv *jvmti_ = nullptr;
    static inline core::Core *core_ = nullptr;
    static inline jvmtiCapabilities caps_{};
    static inline std::atomic<bool> dead_{false};
    static inline std::atomic<TId> nextTag_{1};
    static inline std::mutex tagMutex_;  // a new tag: read again and set, one thread at a time
};

}  // namespace martini::jvm
