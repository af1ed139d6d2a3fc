// Threads: Martini's thread ids, names and groups, the per-thread context the probes
// use (ThreadContext, in TLS), ThreadStart and ThreadEnd, and the thread data requests
// (GetThreadInfo, the thread list, suspend and resume).
//
// Locks: the registry's (core::ThreadRegistry) guards the records and idByTag_. A
// ThreadContext belongs to its thread (only that thread reads or writes it; it is freed
// at that thread's ThreadEnd).
#pragma once

#include "martini/core/thread_registry.h"
#include "vm.h"

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace martini::jvm {

// Per runtime thread: its id and the shadow stack of instrumented methods entered.
struct ThreadContext {
    TId id = 0;
    std::vector<std::int32_t> stack;
    // A MonitorWaited (ContendedMonitorEntered) is raised only after its MonitorWait
    // (ContendedMonitorEnter) was: a thread that began waiting before the JVM's live
    // phase (Finalizer, Reference Handler) gets no "waited" without a "wait".
    bool waitRaised = false;
    bool contendRaised = false;
};

// The calling thread's context; set on its first probe or at ThreadStart, cleared at
// ThreadEnd. Initial-exec: one TLS load on the probes' path.
extern constinit thread_local ThreadContext *tContext __attribute__((tls_model("initial-exec")));

class Threads {
public:
    static void AddCapabilities(jvmtiCapabilities &caps) { caps.can_get_thread_cpu_time = 1; }
    static void SetCallbacks(jvmtiEventCallbacks &callbacks);
    static void EnableEvents();
    // Monitors, when a client wants contended monitors' owners: each thread's
    // java.lang.Thread gets its object id (tag) when its context is made, so an owner
    // is found by its tag (IdOfThreadObject). Agent_OnLoad.
    static void TrackThreadObjects() { trackObjects_ = true; }

    // The calling thread's context: one TLS load when it exists (the probes' path).
    static ThreadContext &Current(JNIEnv *jni) { return tContext != nullptr ? *tContext : ContextOf(jni); }
    static ThreadContext &ContextOf(JNIEnv *jni);  // created on first use
    // The Martini id of a live thread given its java.lang.Thread (one tag read and one
    // hash lookup); 0 when unknown or not tracked.
    static TId IdOfThreadObject(jthread thread);
    // The Martini id of the runtime thread running as OS thread `tid` (Sampling, for a
    // sample taken in a thread that has no context yet: one started before the agent
    // could see it). When it has none, a record is made, named from the OS, and the
    // thread's context adopts it when it is made.
    static TId IdOfOsThread(pid_t tid);

    // Detach, once the probes are off: every shadow stack emptied (the frames they
    // hold will not be left through a probe any more).
    static void ForgetStacks();

    static TResult Describe(TId id, BitSet requested, unsigned maxFrames, core::ThreadFacts &f);
    static TResult List(std::vector<TId> &out);
    static TResult CurrentThread(TId &id);
    static TResult SuspendAll();
    static TResult ResumeAll();

private:
    // The parent is the thread that called Thread.start() from a probed site; the OS
    // key is the thread's tid.
    struct Record : core::ThreadRecordBase {
        jweak thread = nullptr;  // the java.lang.Thread
        TId tag = 0;             // its object id, when tracked
        std::unique_ptr<ThreadContext> context;
    };
    static void JNICALL OnThreadStart(jvmtiEnv *, JNIEnv *jni, jthread thread);
    static void JNICALL OnThreadEnd(jvmtiEnv *, JNIEnv *jni, jthread thread);
    static void NameOf(JNIEnv *jni, jthread thread, std::string &name, std::string &group);
    static void RaiseStart(const ThreadContext &ctx, TId parent);
    static TResult DescribeLive(jthread thread, BitSet requested, unsigned maxFrames, core::ThreadFacts &f);

    static inline bool trackObjects_ = false;
    static inline core::ThreadRegistry<Record> threads_;
    static inline std::unordered_map<TId, TId> idByTag_;  // live thread's object id -> thread id
};

}  // namespace martini::jvm
