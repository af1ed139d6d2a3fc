// Sampling: SampleHit from HotSpot's AsyncGetCallTrace (AGCT), the way
// async-profiler samples: a signal (SIGPROF) interrupts a thread wherever it is,
// safepoint or not, and the handler walks its Java stack there.
//
// The sampler is five parts, each owning its state:
//   sampling.{h,cpp}     this component: the JVMTI side (capabilities, events,
//                        jmethodIDs at ClassPrepare, DebugNonSafepoints), Start and
//                        Stop, and the signal handler;
//   sample_clocks.h      what sends the signal: a perf task-clock event or a POSIX CPU
//                        timer per thread (CPU mode), or the sampler thread's tgkill to
//                        every thread (wall mode); the rate and mode; the perf events'
//                        kernel call-chain rings (martini-core's kernel_stacks.h);
//   code_map.h           where the JVM's code is (the handler's lock-free check, the
//                        sampler thread's compiled method at an address);
//   native_unwind.h      the native frames above the Java ones (libunwind up to
//                        libjvm, then frame pointers), and a walk AGCT gave up on
//                        retried from the caller;
//   sampling_drain.cpp   the sampler thread: drains the ring, names the frames, raises
//                        SampleHit; the summary at VMDeath;
// and the ring between the handler and the sampler thread is martini-core's
// core::SampleRing (sampling_shared.h: the slot and the counters both sides touch).
//
// The handler takes no lock of its own (libunwind takes its cache's, with signals
// blocked), allocates nothing and calls no client: it claims a slot of the
// preallocated ring (one compare-and-swap), lets AGCT fill the slot's frames, takes
// the kernel's frames from the thread's perf ring, and publishes it. The sampler thread (attached to the JVM as a daemon) takes the
// published slots every 5 to 100 ms (as long as a quarter of the ring takes to fill
// at the rate asked for), turns jmethodIDs into method ids and bytecode indexes into
// lines, and raises SampleHit there, in time order within each batch. A sample AGCT
// could not walk is counted by AGCT's cause and raised with its native frames or the
// code blob it was in as its stack, or without DR_VM_CALL_STACK when it has neither; a
// sample that found the ring full is counted and lost. Threads without a Java stack
// (the JVM's own) are raised with their native frames. In CPU mode, timer periods
// that passed without a signal (si_overrun) are counted and said, never raised as
// samples. The counts are printed at VMDeath.
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
// Locks (this component): controlMutex_ makes Start and Stop one at a time (they may
// be called from any thread of the JVM: VMInit, VMDeath, attach, detach); SetRate
// does not take it (a client may set the rate from its SampleHit handler, on the
// sampler thread that Stop joins). Nothing is locked in the handler. Each other part
// names its own lock: SampleClocks its mutex_, CodeMap its mutex_, the sampler thread
// its sleep's mutex; the ring and the native unwinder none.
#pragma once

#include "vm.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

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
    static void JmethodIdsForLoadedClasses();
    static void SwitchEvents(bool on);  // ClassLoad and the code events
    // sampling_drain.cpp: the sampler thread (the drain), started and joined.
    static void StartThread();
    static void StopThread();
    static void Run();
    static void Drain(JNIEnv *jni);  // raises the ready samples (in a JNI local frame)
    static std::chrono::milliseconds DrainInterval();

    static inline bool wanted_ = false;
    static inline std::atomic<bool> running_{false};
    static inline std::atomic<bool> active_{false};  // from Start to Stop: jmethodIDs at ClassPrepare
    static inline std::mutex controlMutex_;  // Start, Stop
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
