// Threads: Martini's thread ids (from a counter: Mono reuses pthread ids), names,
// ThreadStart and ThreadEnd, the per-thread context the call callbacks use
// (ThreadContext, through one initial-exec TLS pointer), the provider's own runtime
// threads (attached to Mono, hidden from clients) and the thread data requests.
//
// Locks: the registry's (core::ThreadRegistry) guards the records. A ThreadContext's shadow stack belongs to its
// thread (only that thread pushes and pops) until the thread ended or the runtime shuts
// down, when the shutting-down thread closes what is left open.
#pragma once

#include "martini/core/thread_registry.h"
#include "vm.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace martini::mono {

// One frame of the shadow stack: the method entered and which clients were told.
struct Frame {
    MonoMethod *method;
    ClientMask interest;  // 0: nobody was told of the enter (so nobody of the leave)
};

struct ThreadContext {
    TId id = 0;
    uintptr_t tid = 0;       // pthread_t
    Frame *frames = nullptr;  // the shadow stack, innermost last
    std::uint32_t depth = 0;
    std::uint32_t capacity = 0;
    std::uint64_t allocatedBytes = 0;  // since the last sampled allocation (Heap)
    // The monitor of the MonitorWait raised on this thread, until its MonitorWaited.
    TId waitObject = 0, waitClass = 0;
    ClientMask waitInterest = 0;
    // CPU mode: the thread's CPU time its sample signals stood for, and the sampler's
    // epoch then (Sampling, in the signal handler on this thread).
    std::uint64_t sampledCpuNs = 0;
    std::uint32_t sampledEpoch = 0;
    bool hidden = false;  // the provider's own thread: no events
    bool started = false;  // ThreadStart raised (or queued)
    bool ended = false;
};

// The calling thread's context, set at the thread's first event or name (so that a
// name given before Thread.Start is in its ThreadStart). Initial-exec: one TLS load on the call path; a module
// Mono loads with dlopen has ~1.5 KiB of static TLS, so only this pointer lives there.
extern constinit thread_local ThreadContext *tContext __attribute__((tls_model("initial-exec")));

class Threads {
public:
    static void SetCallbacks(MonoProfilerHandle h);

    // The calling thread's context, made when Mono raised no thread_started for it
    // (a thread that ran managed code before the module's callbacks were set).
    static ThreadContext *Current() { return tContext != nullptr ? tContext : Adopt(); }
    static ThreadContext *Adopt();

    // The provider's own threads: attached to the runtime (a thread Mono does not know
    // must not call into it) and hidden from clients (no ThreadStart, no events).
    static MonoThread *AttachOwnThread();
    static void DetachOwnThread(MonoThread *thread);

    // VmShutdown: every thread still known gets its open frames closed and its ThreadEnd
    // (the main thread never gets thread_stopped; Environment.Exit suspends the others).
    // `othersToo` false: only the calling thread's (at exit, after an unhandled
    // exception, other threads may still run); the others' open frames are counted.
    static void EndAll(bool othersToo);
    static std::uint64_t FramesLeftOpen() { return framesLeftOpen_; }

    static TResult Describe(TId id, BitSet requested, unsigned maxFrames, core::ThreadFacts &f);
    static TResult List(std::vector<TId> &out);
    static TResult CurrentThread(TId &id);

    // The thread's name as known now ("" when none).
    static std::string NameOf(TId id);
    static TId IdOfCurrent() {
        const ThreadContext *c = Current();
        return c != nullptr && !c->hidden ? c->id : 0;
    }

private:
    // The OS key is the pthread_t; hidden: the provider's own thread.
    struct Record : core::ThreadRecordBase {
        std::unique_ptr<ThreadContext> context;
    };
    static ThreadContext *Make(uintptr_t tid, bool hidden);
    // The context made at thread_started for the calling thread whose ThreadStart is
    // still pending (null when none).
    static ThreadContext *Pending();
    static void Publish(ThreadContext *ctx);  // becomes tContext; ThreadStart raised
    static void RaiseStart(TId id);
    static void End(ThreadContext &ctx);
    static void OnStarted(MonoProfiler *, uintptr_t tid);
    static void OnStopped(MonoProfiler *, uintptr_t tid);
    static void OnName(MonoProfiler *, uintptr_t tid, const char *name);

    static inline core::ThreadRegistry<Record> threads_;
    static inline std::uint64_t framesLeftOpen_ = 0;
};

}  // namespace martini::mono
