// Sampling: SampleHit from HotSpot's AsyncGetCallTrace (AGCT), the way
// async-profiler samples: a signal (SIGPROF) interrupts a thread wherever it is,
// safepoint or not, and the handler walks its Java stack there.
//
//   CPU mode   a perf task-clock event per thread (perf_event_open: a signal at each
//              1/hz seconds of CPU the thread uses, at any rate); where the kernel
//              refuses perf events, or MARTINI_SAMPLING_CLOCK=timer asks for it, a
//              POSIX timer on the thread's CPU clock (timer_create, SIGEV_THREAD_ID),
//              which fires at the kernel's tick: the periods it misses (si_overrun)
//              are counted and said, never raised as samples.
//   wall mode  the sampler thread signals every runtime thread (tgkill) each 1/hz
//              seconds, sleeping, waiting and blocked ones too.
//
// The handler takes no lock, allocates nothing and calls no client: it claims a slot
// of a preallocated ring (core::SampleRing: one compare-and-swap), lets AGCT fill the
// slot's frames and publishes it. The sampler thread (attached to the JVM as a daemon)
// takes the published slots every 5 to 100 ms (as long as a quarter of the ring takes to fill at the rate
// asked for), turns jmethodIDs into method ids and bytecode indexes into lines, and
// raises SampleHit there, in time order within each batch. A sample AGCT could not
// walk is raised without DR_VM_CALL_STACK and counted by AGCT's cause; a sample that
// found the ring full is counted and lost. The counts are printed at VMDeath.
//
// AGCT names only methods with a jmethodID: every class gets its jmethodIDs at
// ClassPrepare (GetClassMethods), and the classes loaded before Start at Start.
// HotSpot must record debug information at every instruction of compiled code
// (DebugNonSafepoints), so a sample in a loop with no safepoint poll names the
// loop's method and line, inlined or not. The flag is set through HotSpot's flag
// table (hotspot.h) while sampling runs; where that table cannot be read,
// CompiledMethodLoad is switched on instead (with nothing done in it unless a client
// wants JIT events), which makes HotSpot record the same, at the price of an address
// map built and posted for every compiled method.
//
// No bytecode is rewritten and no call-graph capability is taken.
//
// Locks: threadsMutex_ guards threads_ (the sampled OS threads and their timers) and
// a change of rate or mode, and is never taken in the handler; the ring's slots are
// handed over by their sequence numbers (core::SampleRing); rate and mode are
// atomics. Start and Stop may be called from any thread of the JVM (VMInit, VMDeath, attach, detach) but not at once
// (controlMutex_, which SetRate does not take: a client may set the rate from its
// SampleHit handler, on the sampler thread that Stop joins).
#pragma once

#include "vm.h"

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace martini::jvm {

class Sampling {
public:
    // Agent_OnLoad: wanted when some client observes SampleHit.
    static void Decide();
    static bool Wanted() { return wanted_; }
    static void AddCapabilities(jvmtiCapabilities &caps);
    // Agent_OnLoad: an empty ClassLoad callback (AGCT walks nothing unless the JVM
    // posts ClassLoad events), after the callbacks are set: ClassLoad on, and
    // DebugNonSafepoints or CompiledMethodLoad (see above).
    static void SetCallbacks(jvmtiEventCallbacks &callbacks);
    static void EnableEvents();
    // IMpi::SetSamplingRate through the core: the rate for the next Start, and for the
    // running sampler at once.
    static TResult SetRate(unsigned hz, bool wall);

    // Starts sampling (idempotent): jmethodIDs for the classes loaded so far, the
    // signal handler, the timers of the threads running now, the sampler thread.
    // Returns "" or why sampling cannot run (no AGCT in this JVM, ...).
    static std::string Start(JNIEnv *jni);
    // Stops sampling (idempotent): the timers deleted, the samples taken so far
    // raised, the sampler thread ended, ClassLoad and the code events off (those no
    // client wants). The handler stays installed and returns at once.
    static void Stop();
    static bool Running() { return running_.load(std::memory_order_acquire); }

    // ClassPrepare (Instrumentation): the class's jmethodIDs, so AGCT can name its methods.
    static void Prepared(jclass klass);
    // CompiledMethodLoad/Unload and DynamicCodeGenerated (CompiledCode), when they are
    // on (HotSpot's tables not readable): where the JVM's code is, so that a walk is
    // retried only from an address inside it. `method`: the compiled method's (null
    // for the interpreter and stubs), which names a frame AGCT could not name at an
    // address inside it. Otherwise the code cache's bounds and segment map answer.
    static void CodeLoaded(const void *address, jint size, jmethodID method);
    static void CodeUnloaded(const void *address);
    // On the thread itself, at ThreadStart and ThreadEnd (Threads).
    static void ThreadStarted();
    static void ThreadEnded();

    // VMDeath: one line with what was sampled and what could not be.
    static void PrintSummary();
    static void WarnOfMissedPeriods();

private:
    // CPU mode counts a thread's CPU time with a perf task-clock event (a signal per
    // period at any rate, and the cost of as many walks), or with a POSIX CPU timer
    // (checked at the kernel's tick: above its rate periods are missed).
    struct SampledThread {
        int perfFd = -1;  // the task-clock event; its overflows signal the thread
        timer_t timer{};
        bool hasTimer = false;
        bool notJava = false;  // its samples found no Java thread: left alone
    };
    static void JmethodIdsForLoadedClasses();
    static void SwitchEvents(bool on);  // ClassLoad and the code events
    // Caller holds threadsMutex_.
    static void AddThreadLocked(pid_t tid);
    static void ArmLocked(SampledThread &t, pid_t tid);
    static void DisarmLocked(SampledThread &t);
    static void DropThreadLocked(pid_t tid);
    // The sampler thread, about once a second: threads started since (the JVM's own,
    // which have no ThreadStart: JIT compiler threads made on demand) are armed, and
    // ended ones that had none either dropped.
    static void RescanThreads();
    static inline std::atomic<pid_t> samplerTid_{0};  // never sampled
    static void Run();          // the sampler thread
    static void SignalAll();    // wall mode: one signal to each runtime thread
    static void Drain(JNIEnv *jni);  // raises the ready samples (in a JNI local frame)
    static std::chrono::milliseconds DrainInterval();

    static inline bool wanted_ = false;
    static inline std::atomic<unsigned> hz_{Martini::MPI::kDefaultSamplingHz};
    static inline std::atomic<bool> wall_{false};
    static inline std::atomic<bool> running_{false};
    static inline std::atomic<bool> stopping_{false};
    // The sampler thread sleeps on this between drains; Stop wakes it at once, so that
    // a VM that ends does not wait out its sleep.
    static inline std::mutex sleepMutex_;
    static inline std::condition_variable wake_;
    static inline std::atomic<bool> active_{false};  // from Start to Stop: jmethodIDs at ClassPrepare
    static inline std::mutex controlMutex_;  // Start, Stop
    static inline std::mutex threadsMutex_;
    static inline std::unordered_map<pid_t, SampledThread> threads_;
    static inline std::thread thread_;
    // The code events were on from Agent_OnLoad, so every range was seen; else
    // Start asks the JVM for the code made before (GenerateEvents).
    static inline bool codeComplete_ = false;
    // DebugNonSafepoints in HotSpot's flag table (hotspot.h), null where it cannot be
    // found (then the code events stand in), and its value before sampling: set while
    // sampling runs; then no code events are needed (the code cache's bounds and its
    // segment map answer IsCode and MethodAt).
    static inline bool *debugFlag_ = nullptr;
    static inline bool debugFlagBefore_ = false;
};

}  // namespace martini::jvm
