// What the sampler's two sides share: the signal handler that fills the ring
// (sampling.cpp, native_unwind.cpp) and the sampler thread that drains it into
// SampleHit events (sampling_drain.cpp): AGCT's types, the ring's slot and the ring,
// and the counters the summary reads. Private to the sampler; no lock: the ring hands
// its slots over by their sequence numbers (core::SampleRing), the counters are
// relaxed atomics.
#pragma once

#include "jvm_support.h"
#include "vm.h"
#include "martini/core/sample_ring.h"

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstdint>

namespace martini::jvm::sampling {

// ---- AsyncGetCallTrace (HotSpot's, exported by libjvm.so; not in any header) ----------

struct AgctFrame {
    jint lineno;  // the bytecode index for a Java frame; negative for a native method
    jmethodID method;
};
struct AgctTrace {
    JNIEnv *env;
    jint numFrames;  // frames written, or a negative cause (kCauses)
    AgctFrame *frames;
};
using AgctFn = void (*)(AgctTrace *, jint, void *);

// AGCT's causes for a walk that gave no frames (HotSpot's forte.cpp), by -code; and
// Martini's own for a signal that found no JVM thread.
constexpr const char *kCauses[] = {
    "no Java frame",           // 0
    "no class load",           // -1: jmethodIDs not made yet
    "GC active",               // -2
    "unknown, not in Java",    // -3
    "not walkable, not in Java",  // -4
    "unknown, in Java",        // -5
    "not walkable, in Java",   // -6
    "unknown thread state",    // -7
    "thread exiting",          // -8
    "deoptimizing",            // -9
    "at safepoint",            // -10
};
constexpr int kCauseCount = sizeof kCauses / sizeof kCauses[0];
constexpr jint kNotJvmThread = -1000;
constexpr jint kUnknownFrameLine = -1000;  // the frame a retried walk could not name  // GetEnv found no JVM thread (a GC or native thread)

inline std::atomic<AgctFn> gAgct{nullptr};

// ---- The ring the handler writes -----------------------------------------------------------

constexpr jint kMaxFrames = 512;
constexpr int kMaxNativeFrames = 128;
constexpr int kMaxKernelFrames = 64;
constexpr std::size_t kSlots = 1024;  // a power of two (core::SampleRing)

struct RawSample {
    jint numFrames = 0;
    pid_t tid = 0;
    std::uint32_t missed = 0;  // timer periods that passed without a signal (overruns): counted, never raised
    TId threadId = 0;          // the thread's Martini id when it has a context; 0 otherwise
    std::uintptr_t pc = 0;     // where the thread was interrupted
    std::uint64_t timeNs = 0;
    // The native frames above the Java ones, innermost first: the interrupted address
    // when it is outside the JVM's code, then the return addresses the frame-pointer
    // chain gives until it reaches the JVM's code (native_unwind.h).
    std::int32_t numNative = 0;
    std::uintptr_t sp = 0;      // the interrupted stack pointer
    bool stackTopKnown = false;  // the walk had the stack's bounds (else NativeUnwind::LearnStackTop)
    std::uintptr_t native[kMaxNativeFrames];
    // The kernel's frames on top of everything, innermost first, when the thread was
    // interrupted in the kernel and its clock records them (kernel_stacks.h).
    std::int32_t numKernel = 0;
    std::uintptr_t kernel[kMaxKernelFrames];
    AgctFrame frames[kMaxFrames];
};

// Claimed and published in the signal handler, read by the sampler thread alone.
// Mapped at the first Start (9 MiB), never unmapped.
inline core::SampleRing<RawSample, kSlots> gRing;

// Counters (relaxed: read for the summary).
inline std::atomic<std::uint64_t> gWalkedFromCaller{0}, gRecovered{0}, gNamedByAddress{0};
inline std::atomic<std::uint64_t> gHandlerNs{0}, gSamplerCpuNs{0}, gJmethodIdNs{0};  // the direct cost, for the summary
inline std::atomic<std::uint64_t> gTaken{0}, gLost{0}, gRaised{0}, gNotJvmThread{0}, gNoId{0}, gTruncated{0};
inline std::atomic<std::uint64_t> gNativeNamed{0};  // samples AGCT could not walk, named by their native frames
inline std::atomic<std::uint64_t> gWithNative{0};   // samples with native frames on top
inline std::atomic<std::uint64_t> gWithKernel{0};   // samples with kernel frames on top
inline std::atomic<std::uint64_t> gJvmOwn{0};       // samples of threads without a JVM thread (GC workers, ...)
inline std::array<std::atomic<std::uint64_t>, kCauseCount + 1> gFailed{};  // last: causes AGCT does not name
inline std::atomic<std::uint64_t> gMissed{0};  // timer periods that passed without a signal

// The sampler thread is never sampled.
inline constinit thread_local bool tSamplerThread = false;

}  // namespace martini::jvm::sampling
