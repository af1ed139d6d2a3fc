#include "sampling.h"

#include "classes.h"
#include "code_map.h"
#include "hotspot.h"
#include "sampling_shared.h"
#include "jvm_support.h"
#include "native_unwind.h"
#include "sample_clocks.h"
#include "threads.h"
#include "martini/core/kernel_stacks.h"
#include "martini/core/log.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace martini::jvm {

using namespace sampling;

namespace {

std::atomic<bool> gEmptyHandler{false};  // MARTINI_SAMPLING_HANDLER=empty: the signals alone (bench/jvm_sampling.sh)

// The signal handler: async-signal-safe throughout (TLS reads, atomics, AGCT, rdtsc
// or clock_gettime, gettid).
void OnSignal(int, siginfo_t *info, void *ucontext) {
    const int savedErrno = errno;
    if (gEmptyHandler.load(std::memory_order_relaxed)) {
        gTaken.fetch_add(1, std::memory_order_relaxed);
    } else if (Sampling::Running()) {
        const std::uint64_t entered = NowNs();
        JNIEnv *jni = nullptr;
        const AgctFn agct = gAgct.load(std::memory_order_relaxed);
        JavaVM *vm = Vm::Java();
        const bool jvmThread = vm != nullptr && vm->GetEnv(reinterpret_cast<void **>(&jni), JNI_VERSION_1_6) == JNI_OK;
        if (RawSample *s = gRing.Claim()) {
            s->tid = static_cast<pid_t>(syscall(SYS_gettid));
            s->threadId = tContext != nullptr ? tContext->id : 0;
            s->missed = info != nullptr && info->si_code == SI_TIMER && info->si_overrun > 0
                            ? static_cast<std::uint32_t>(std::min(info->si_overrun, 1000000))
                            : 0;
            s->timeNs = NowNs();
#if defined(__x86_64__)
            s->pc = static_cast<std::uintptr_t>(static_cast<ucontext_t *>(ucontext)->uc_mcontext.gregs[REG_RIP]);
#endif
            NativeUnwind::Walk(*s, ucontext);
            s->numKernel = core::KernelRings::Take(s->tid, s->kernel, kMaxKernelFrames);
            if (jvmThread && agct != nullptr) {
                AgctTrace trace{jni, 0, s->frames};
                agct(&trace, kMaxFrames, ucontext);
                if (trace.numFrames == -5 || trace.numFrames == -6) {
                    gWalkedFromCaller.fetch_add(1, std::memory_order_relaxed);
                    NativeUnwind::WalkFromCaller(agct, trace, ucontext);
                    if (trace.numFrames > 0) gRecovered.fetch_add(1, std::memory_order_relaxed);
                }
                s->numFrames = trace.numFrames;
            } else {
                s->numFrames = kNotJvmThread;
            }
            gRing.Publish(s);
            gTaken.fetch_add(1, std::memory_order_relaxed);
        } else {
            gLost.fetch_add(1, std::memory_order_relaxed);
        }
        gHandlerNs.fetch_add(NowNs() - entered, std::memory_order_relaxed);
    }
    errno = savedErrno;
}

}  // namespace

// ---- Set-up ----------------------------------------------------------------------------------

void Sampling::Decide() { wanted_ = Vm::Wants(EV_SAMPLE_HIT); }

void Sampling::AddCapabilities(jvmtiCapabilities &caps) {
    if (!wanted_) return;
    // Debug information at every instruction: the flag itself where HotSpot's tables
    // give it, else through CompiledMethodLoad (see sampling.h).
    // MARTINI_SAMPLING_DEBUG_INFO=events takes the events even so (to measure and
    // test that way).
    const char *how = std::getenv("MARTINI_SAMPLING_DEBUG_INFO");
    const bool events = how != nullptr && std::strcmp(how, "events") == 0;
    debugFlag_ = events ? nullptr : hotspot::BoolFlag("DebugNonSafepoints");
    CodeMap::UseHotspotTables(debugFlag_ != nullptr);
    if (debugFlag_ != nullptr) debugFlagBefore_ = *debugFlag_;  // set by SwitchEvents
    else caps.can_generate_compiled_method_load_events = 1;
    caps.can_get_line_numbers = 1;
}

void Sampling::SetCallbacks(jvmtiEventCallbacks &callbacks) {
    if (!wanted_) return;
    callbacks.ClassLoad = [](jvmtiEnv *, JNIEnv *, jthread, jclass) {};
}

void Sampling::EnableEvents() {
    if (!wanted_) return;
    jvmtiPhase phase = JVMTI_PHASE_LIVE;
    Vm::Jvmti()->GetPhase(&phase);
    SwitchEvents(true);
    codeComplete_ = phase == JVMTI_PHASE_ONLOAD;  // every piece of code will be reported
}

void Sampling::SwitchEvents(bool on) {
    jvmtiEnv *jvmti = Vm::Jvmti();
    // AsyncGetCallTrace answers "no class load" (-1) while nobody asks for these.
    jvmti->SetEventNotificationMode(on ? JVMTI_ENABLE : JVMTI_DISABLE, JVMTI_EVENT_CLASS_LOAD, nullptr);
    if (debugFlag_ != nullptr) {  // back to what it was while nobody samples; no code events needed
        *debugFlag_ = on || debugFlagBefore_;
        return;
    }
    // The code events stay on while a client wants them (CompiledCode).
    static constexpr Vm::EventSwitch kCode[] = {
        {EV_JITTED_METHOD_LOADED, JVMTI_EVENT_COMPILED_METHOD_LOAD},
        {EV_JITTED_METHOD_UNLOADED, JVMTI_EVENT_COMPILED_METHOD_UNLOAD},
        {EV_DYNAMIC_CODE_GENERATED, JVMTI_EVENT_DYNAMIC_CODE_GENERATED},
    };
    for (const Vm::EventSwitch &e : kCode) {
        if (on || !Vm::Wants(e.event)) jvmti->SetEventNotificationMode(on ? JVMTI_ENABLE : JVMTI_DISABLE, e.jvmti, nullptr);
    }
}

TResult Sampling::SetRate(unsigned hz, bool wall) {
    if (hz == 0) return MRTE_ERROR_ILLEGAL_ARGUMENT;
    // Not controlMutex_: a client may ask from its SampleHit handler, on the sampler
    // thread, which Stop joins while holding it.
    SampleClocks::SetRate(hz, wall);
    return MRTE_RESULT_OK;
}

void Sampling::Prepared(jclass klass) {
    if (!wanted_ || !active_.load(std::memory_order_acquire)) return;
    const std::uint64_t started = NowNs();
    jint count = 0;
    jmethodID *methods = nullptr;
    if (Vm::Jvmti()->GetClassMethods(klass, &count, &methods) == JVMTI_ERROR_NONE) {
        Vm::Jvmti()->Deallocate(reinterpret_cast<unsigned char *>(methods));
    }
    gJmethodIdNs.fetch_add(NowNs() - started, std::memory_order_relaxed);
}

void Sampling::CodeLoaded(const void *address, jint size, jmethodID method) {
    if (!wanted_ || address == nullptr || size <= 0) return;
    CodeMap::Loaded(reinterpret_cast<std::uintptr_t>(address), static_cast<std::size_t>(size), method);
}

void Sampling::CodeUnloaded(const void *address) {
    if (wanted_) CodeMap::Unloaded(reinterpret_cast<std::uintptr_t>(address));
}

void Sampling::JmethodIdsForLoadedClasses() {
    jvmtiEnv *jvmti = Vm::Jvmti();
    jint count = 0;
    jclass *classes = nullptr;
    if (jvmti->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return;
    JNIEnv *jni = Vm::Jni();
    for (jint i = 0; i < count; ++i) {
        jint status = 0;
        // Only prepared classes have methods to name; the others come through ClassPrepare.
        if (jvmti->GetClassStatus(classes[i], &status) == JVMTI_ERROR_NONE && (status & JVMTI_CLASS_STATUS_PREPARED)) {
            jint n = 0;
            jmethodID *methods = nullptr;
            if (jvmti->GetClassMethods(classes[i], &n, &methods) == JVMTI_ERROR_NONE) {
                jvmti->Deallocate(reinterpret_cast<unsigned char *>(methods));
            }
        }
        if (jni != nullptr) jni->DeleteLocalRef(classes[i]);
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char *>(classes));
}

std::string Sampling::Start(JNIEnv *) {
    NativeUnwind::NoteStackTop();  // the calling thread's (VMInit: the main thread)
    (void)NativeUnwind::Chosen();  // read here, never first in the handler
    (void)NativeUnwind::Dwarf();
    NativeUnwind::NoteJvmText();
    (void)core::KernelStacksChosen();
    if (const char *h = std::getenv("MARTINI_SAMPLING_HANDLER")) {
        gEmptyHandler.store(std::strcmp(h, "empty") == 0, std::memory_order_relaxed);
    }
    std::lock_guard control(controlMutex_);
    if (running_.load(std::memory_order_acquire)) return "";
    if (gAgct.load() == nullptr) {
        auto agct = reinterpret_cast<AgctFn>(dlsym(RTLD_DEFAULT, "AsyncGetCallTrace"));
        if (agct == nullptr) return "this JVM has no AsyncGetCallTrace (not HotSpot?): no SampleHit events";
        gAgct.store(agct);
    }
    if (!gRing.Map()) return "cannot map the sample buffer: no SampleHit events";
    active_.store(true, std::memory_order_release);  // ClassPrepare makes jmethodIDs from now on
    JmethodIdsForLoadedClasses();
    if (debugFlag_ != nullptr && !hotspot::FindCodeCache()) {
        core::LogLine("sampling: cannot read where HotSpot's code cache lies: walks AsyncGetCallTrace gives up on "
                      "are not tried again from the caller");
    }
    if (!codeComplete_) {  // started after Agent_OnLoad (attach) or after a Stop
        SwitchEvents(true);
        if (debugFlag_ == nullptr) {  // the code made before, from the code events
            Vm::Jvmti()->GenerateEvents(JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
            Vm::Jvmti()->GenerateEvents(JVMTI_EVENT_COMPILED_METHOD_LOAD);
        }
        codeComplete_ = true;
    }
    static bool handlerInstalled = false;
    if (!handlerInstalled) {
        struct sigaction sa {};
        sa.sa_sigaction = OnSignal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGPROF, &sa, nullptr) != 0) return "cannot install the SIGPROF handler: no SampleHit events";
        handlerInstalled = true;
    }
    running_.store(true, std::memory_order_release);
    // The threads running now (later ones at their ThreadStart, or when the sampler
    // thread rescans); a thread whose samples have neither Java nor native frames is
    // left alone (sampling_drain.cpp: FromJavaThread).
    SampleClocks::Start();
    StartThread();
    return "";
}

void Sampling::Stop() {
    std::lock_guard control(controlMutex_);
    if (!running_.load(std::memory_order_acquire)) return;
    SampleClocks::Stop();
    running_.store(false, std::memory_order_release);
    StopThread();  // it raises what is left, then detaches from the JVM
    // The JVM back to full speed: no ClassLoad, CompiledMethodLoad (and with it the
    // debug information at every instruction) or jmethodIDs at ClassPrepare. What is
    // known of the code is dropped: unloads are not seen from now on, and Start asks
    // for it all again.
    active_.store(false, std::memory_order_release);
    SwitchEvents(false);
    CodeMap::Clear();
    codeComplete_ = false;
}

// ---- Threads -------------------------------------------------------------------------------

void Sampling::ThreadStarted() {
    if (!wanted_ || tSamplerThread) return;
    NativeUnwind::NoteStackTop();
    if (!running_.load(std::memory_order_acquire)) return;
    SampleClocks::Add(static_cast<pid_t>(syscall(SYS_gettid)));
}

void Sampling::ThreadEnded() {
    if (!running_.load(std::memory_order_acquire) || tSamplerThread) return;
    SampleClocks::Drop(static_cast<pid_t>(syscall(SYS_gettid)));
}

}  // namespace martini::jvm
