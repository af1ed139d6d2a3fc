// Sampling's drain side: the sampler thread that takes the ring's published samples,
// names their frames and raises them as SampleHit events (no slot held while a client
// runs), and the summary at the end.
//
// Owns: the thread and its sleep, and its caches (method ids by jmethodID, native
// frames by address, the threads never seen to start). The caches are the sampler
// thread's alone; Start and Stop (under Sampling's controlMutex_) start and join it.
// Locks: gSleepMutex with gWake, the sleep between drains, which StopThread cuts short.
#include "sampling.h"

#include "classes.h"
#include "code_map.h"
#include "hotspot.h"
#include "native_unwind.h"
#include "sample_clocks.h"
#include "sampling_shared.h"
#include "threads.h"
#include "martini/core/log.h"
#include "martini/core/native_symbols.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace martini::jvm {

using namespace sampling;

// ---- The sampler thread -----------------------------------------------------------------------

namespace {

// The drain thread's sleep between drains, which StopThread cuts short (so that a VM
// that ends does not wait out the sleep): the one lock of this part.
std::mutex gSleepMutex;
std::condition_variable gWake;
bool gStopping = false;  // under gSleepMutex
std::thread gThread;

// jmethodID -> method id (jmethodIDs are never reused). The sampler thread's alone.
std::unordered_map<jmethodID, TId> gMethodCache;

// The threads Martini never saw start, as their samples were walked (the sampler
// thread's alone; cleared at StopThread, thread ids are reused): see FromJavaThread.
struct UnseenThread {
    std::uint8_t emptyWalks = 0;  // walks that found no Java frame
    bool java = false;            // a walk found Java frames
};
constexpr std::uint8_t kEmptyWalksOfNonJava = 8;
std::unordered_map<pid_t, UnseenThread> gUnseen;
// When each thread's stack was last learned for the native walks (NativeUnwind).
std::unordered_map<pid_t, std::chrono::steady_clock::time_point> gLearnedStacks;

// The local references JVMTI hands the sampler thread while it names methods, freed
// after each batch (an attached thread has no Java frame to pop them).
class LocalFrame {
public:
    explicit LocalFrame(JNIEnv *jni) : jni_(jni != nullptr && jni->PushLocalFrame(64) == JNI_OK ? jni : nullptr) {}
    ~LocalFrame() {
        if (jni_ != nullptr) jni_->PopLocalFrame(nullptr);
    }
    LocalFrame(const LocalFrame &) = delete;
    LocalFrame &operator=(const LocalFrame &) = delete;

private:
    JNIEnv *jni_;
};

}  // namespace

void Sampling::StartThread() {
    {
        std::lock_guard lock(gSleepMutex);
        gStopping = false;
    }
    gThread = std::thread(Run);
}

void Sampling::StopThread() {
    {
        std::lock_guard lock(gSleepMutex);
        gStopping = true;
    }
    gWake.notify_all();
    if (gThread.joinable()) gThread.join();
    gUnseen.clear();
    gLearnedStacks.clear();
}

std::chrono::milliseconds Sampling::DrainInterval() {
    // A quarter of the ring filled at the rate asked for, with every sampled thread busy,
    // between 5 and 100 ms: few wakeups at 100 Hz, no ring overflow at high rates.
    const std::size_t threads = std::max<std::size_t>(1, SampleClocks::Count());
    const double perSecond = static_cast<double>(SampleClocks::Hz()) * static_cast<double>(threads);
    const auto ms = static_cast<long>(1000.0 * (kSlots / 4) / perSecond);
    return std::chrono::milliseconds(std::clamp(ms, 5L, 100L));
}

void Sampling::Run() {
    tSamplerThread = true;
    JavaVM *vm = Vm::Java();
    JNIEnv *jni = nullptr;
    JavaVMAttachArgs args{JNI_VERSION_1_8, const_cast<char *>("Martini sampler"), nullptr};
    const bool attached = vm->AttachCurrentThreadAsDaemon(reinterpret_cast<void **>(&jni), &args) == JNI_OK;
    if (!attached) jni = nullptr;
    // Not sampled itself: attaching made it a Java thread with a ThreadStart.
    SampleClocks::Exclude(static_cast<pid_t>(syscall(SYS_gettid)));
    using Clock = std::chrono::steady_clock;
    auto next = Clock::now();
    auto lastDrain = next;
    auto lastRescan = next;
    // Sleeps until `until` or Stop; true when it is time to stop.
    auto sleepUntil = [](Clock::time_point until) {
        std::unique_lock lock(gSleepMutex);
        return gWake.wait_until(lock, until, [] { return gStopping; });
    };
    for (;;) {
        const auto interval = DrainInterval();
        if (SampleClocks::Wall()) {  // a signal to every thread each period
            next += std::chrono::nanoseconds(1'000'000'000L / SampleClocks::Hz());
            const auto now = Clock::now();
            if (next < now) next = now;  // late (a slow drain): no burst to catch up
            if (sleepUntil(next)) break;
            SampleClocks::SignalAll();
        } else if (sleepUntil(Clock::now() + interval)) {  // the threads' clocks signal them
            break;
        }
        if (Clock::now() - lastDrain >= interval) {
            Drain(jni);
            lastDrain = Clock::now();
        }
        if (Clock::now() - lastRescan >= std::chrono::seconds(1)) {
            SampleClocks::Rescan();
            lastRescan = Clock::now();
        }
    }
    // Samples taken before the timers were deleted: a handler still running on
    // another thread finishes its slot within microseconds (waited for, 10 ms at most).
    for (int i = 0; i < 100 && gRing.AnyClaimed(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(100));
    Drain(jni);
    gMethodCache.clear();
    timespec cpu{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) {
        gSamplerCpuNs.fetch_add(static_cast<std::uint64_t>(cpu.tv_sec) * 1'000'000'000ull +
                                    static_cast<std::uint64_t>(cpu.tv_nsec),
                                std::memory_order_relaxed);
    }
    if (attached) vm->DetachCurrentThread();
}

// Whether the sample is a Java thread's; `threadId` made for a thread Martini never saw
// start. A thread that is not the JVM's (GC and native threads) goes to `notJava`.
// A JVM thread Martini never saw start is a Java thread that was running before the
// agent came (every thread of a JVM attached to), or one of the JVM's own (a compiler
// thread, with no Java frame ever). One walk that found no Java frame does not tell
// them apart (a Java thread interrupted in the kernel or a stub gives that too): such a
// thread goes to `notJava` after kEmptyWalksOfNonJava such walks and none that found
// Java frames.
namespace {

bool FromJavaThread(const RawSample &s, TId &threadId, std::vector<pid_t> &notJava) {
    // Native frames make any thread's sample worth raising: the JVM's own threads (GC
    // workers, the VM thread) and its JIT compiler threads, named from /proc.
    const bool native = s.numNative > 0;
    if (s.numFrames == kNotJvmThread) {
        if (!native) {
            notJava.push_back(s.tid);
            return false;
        }
        if (threadId == 0) threadId = Threads::IdOfOsThread(s.tid);
        return true;
    }
    if (threadId != 0) return true;
    UnseenThread &u = gUnseen[s.tid];
    if (s.numFrames > 0) {
        u.java = true;
    } else if (!u.java && !native) {
        if (++u.emptyWalks == kEmptyWalksOfNonJava) notJava.push_back(s.tid);
        return false;
    }
    threadId = Threads::IdOfOsThread(s.tid);
    return true;
}

// Native code by symbol, and the method id of each address seen (0: in no library, so
// not a frame: a caller that code without frame pointers left behind). Sampler thread.
core::NativeSymbols &Symbols() {
    static core::NativeSymbols symbols;
    return symbols;
}
std::unordered_map<std::uintptr_t, TId> gNativeMethods;

TId NativeMethodAt(std::uintptr_t address, bool returnAddress) {
    auto [it, added] = gNativeMethods.try_emplace(address, 0);
    if (added) {
        core::NativeFrame f;
        // A return address is the instruction after the call: its caller is the
        // function holding the call, which may end right there.
        if (Symbols().Lookup(returnAddress ? address - 1 : address, f)) {
            it->second = ClassRegistry::NativeMethod(f.library, f.symbol);
        }
    }
    return it->second;
}

// The sample's native frames (innermost first), up to the first address in no
// library; true when there was one at least.
bool NativeFramesOf(const RawSample &s, std::vector<SStackEntry> &stack) {
    const std::size_t before = stack.size();
    for (std::int32_t i = 0; i < s.numNative && i < kMaxNativeFrames; ++i) {
        const TId method = NativeMethodAt(s.native[i], i > 0);
        if (method == 0) break;
        stack.push_back({method, ~0u, 0u});
    }
    return stack.size() > before;
}

// The kernel's frames the sample has (innermost first), named from /proc/kallsyms, on
// top of the stack.
void KernelFramesOf(const RawSample &s, std::vector<SStackEntry> &stack) {
    for (std::int32_t i = 0; i < s.numKernel && i < kMaxKernelFrames; ++i) {
        const TId method = NativeMethodAt(s.kernel[i], i > 0);
        if (method != 0) stack.push_back({method, ~0u, 0u});
    }
}

// The code blob the interrupted address is in, named as HotSpot names it (a stub, the
// interpreter, an adapter), as a method of "[code cache]"; 0 when not known.
TId BlobMethodAt(std::uintptr_t pc) {
    auto [it, added] = gNativeMethods.try_emplace(pc, 0);
    if (added) {
        const std::string name = hotspot::CodeBlobNameAt(pc);
        if (!name.empty() && name != "nmethod") it->second = ClassRegistry::NativeMethod("[code cache]", name);
    }
    return it->second;
}

// A walked sample's frames as MPI stack entries (method ids, bytecode indexes, lines).
// `interrupted`: the compiled method the interrupted pc is in, for a walk retried from
// the caller (its top frame unknown).
void StackOf(const RawSample &s, jmethodID interrupted, std::vector<SStackEntry> &stack) {
    const jint n = s.numFrames;
    if (n == kMaxFrames) gTruncated.fetch_add(1, std::memory_order_relaxed);
    const bool native = NativeFramesOf(s, stack);
    for (jint i = 0; i < n; ++i) {
        AgctFrame f = s.frames[i];
        if (i == 0 && f.lineno == kUnknownFrameLine) {
            if (native) continue;  // the native frames are the interrupted frame
            f.method = interrupted;
            if (f.method != nullptr) {
                gNamedByAddress.fetch_add(1, std::memory_order_relaxed);
            } else if (const TId blob = BlobMethodAt(s.pc); blob != 0) {
                gNamedByAddress.fetch_add(1, std::memory_order_relaxed);
                stack.push_back({blob, ~0u, 0u});
                continue;
            }
        }
        TId method = 0;
        if (f.method != nullptr) {
            auto [it, added] = gMethodCache.try_emplace(f.method, 0);
            if (added) it->second = ClassRegistry::MethodIdOf(f.method);
            method = it->second;
        }
        const MethodRecord *m = ClassRegistry::Method(method);
        const bool java = f.lineno >= 0;
        const auto bci = static_cast<std::uint32_t>(f.lineno);
        stack.push_back({method, java ? bci : ~0u, java && m != nullptr ? m->RunLineAt(bci) : 0u});
    }
}

}  // namespace

namespace {

// A sample named and ready to raise: its slot is back in the ring before any client
// runs.
struct Hit {
    TId threadId;
    std::uint64_t time;
    std::vector<SStackEntry> stack;
};
std::vector<Hit> gHits;  // the sampler thread's, reused from batch to batch

// The sample's stack into `stack`, its thread into `threadId`; false when it is not
// raised (not a Java thread's, or no id).
bool Name(const RawSample &s, TId &threadId, std::vector<SStackEntry> &stack, std::vector<pid_t> &notJava) {
    const jint n = s.numFrames;
    threadId = s.threadId;
    stack.clear();
    if (!FromJavaThread(s, threadId, notJava)) {
        if (n == kNotJvmThread) gNotJvmThread.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    if (s.numNative > 0 && !s.stackTopKnown && s.sp != 0) {
        // Learned (again: a thread id reused, a stack not found) at most once a second.
        const auto now = std::chrono::steady_clock::now();
        auto [it, added] = gLearnedStacks.try_emplace(s.tid, now);
        if (added || now - it->second >= std::chrono::seconds(1)) {
            it->second = now;
            NativeUnwind::LearnStackTop(s.tid, s.sp);
        }
    }
    KernelFramesOf(s, stack);
    const std::size_t kernelFrames = stack.size();
    if (n > 0) {
        // A walk retried from the caller: the interrupted frame is named by the
        // compiled method its address is in, when it is in one.
        StackOf(s, s.frames[0].lineno == kUnknownFrameLine && s.numNative == 0 ? CodeMap::MethodAt(s.pc) : nullptr,
                stack);
    } else if (n == kNotJvmThread) {
        // A thread of the JVM's own with no Java stack: its native frames are its stack.
        NativeFramesOf(s, stack);
        gJvmOwn.fetch_add(1, std::memory_order_relaxed);
    } else {
        const int cause = -n;
        gFailed[cause < kCauseCount ? cause : kCauseCount].fetch_add(1, std::memory_order_relaxed);
        // AGCT found no Java frame it could walk: the native frames still name the
        // sample (the JVM's own code, a JNI library), or the code blob it was
        // interrupted in (the interpreter, a stub), without the Java frames.
        if (NativeFramesOf(s, stack)) {
            gNativeNamed.fetch_add(1, std::memory_order_relaxed);
        } else if (const TId blob = s.numNative == 0 ? BlobMethodAt(s.pc) : 0; blob != 0) {
            stack.push_back({blob, ~0u, 0u});
            gNativeNamed.fetch_add(1, std::memory_order_relaxed);
        }
    }
    if (s.numNative > 0 && stack.size() > kernelFrames) gWithNative.fetch_add(1, std::memory_order_relaxed);
    if (kernelFrames != 0) gWithKernel.fetch_add(1, std::memory_order_relaxed);
    gMissed.fetch_add(s.missed, std::memory_order_relaxed);
    if (threadId == 0) {
        gNoId.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    return true;
}

}  // namespace

void Sampling::Drain(JNIEnv *jni) {
    // The published slots in claim order, then by time: named first (their slots go
    // back to the ring), raised after.
    std::vector<const RawSample *> ready;
    for (std::size_t k = 0; const RawSample *s = gRing.Peek(k); ++k) ready.push_back(s);
    if (ready.empty()) return;  // most wakeups at low rates: no JNI frame for those
    const LocalFrame frame(jni);
    std::stable_sort(ready.begin(), ready.end(),
                     [](const RawSample *a, const RawSample *b) { return a->timeNs < b->timeNs; });
    std::vector<pid_t> notJava;  // threads to stop sampling
    std::size_t hits = 0;
    for (const RawSample *s : ready) {
        if (gHits.size() == hits) gHits.emplace_back();
        Hit &h = gHits[hits];
        h.time = s->timeNs;
        if (Name(*s, h.threadId, h.stack, notJava)) ++hits;
    }
    gRing.Release(ready.size());
    core::Core &core = Vm::Core();
    const BitSet wanted = core.RequestedData(EV_SAMPLE_HIT);
    for (std::size_t i = 0; i < hits; ++i) {
        Hit &h = gHits[i];
        SSampleHitEventData d;
        core::Put(d, wanted, DR_THREAD_ID, d.threadId, h.threadId);
        core::Put(d, wanted, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, h.time);
        if (!h.stack.empty() && (wanted & DR_VM_CALL_STACK)) {
            d.stackTrace.entries = h.stack.data();
            d.stackTrace.uiSize = d.stackTrace.uiActualSize = static_cast<unsigned>(h.stack.size());
            d.validData |= DR_VM_CALL_STACK;
        }
        // One stack, one sample: periods a timer missed are counted (gMissed), never
        // raised again as if they had been sampled.
        core.Raise<ISampleHitEventObserver>(d);
        gRaised.fetch_add(1, std::memory_order_relaxed);
    }
    if (!notJava.empty()) SampleClocks::LeaveAlone(notJava);
}

// ---- Summary --------------------------------------------------------------------------------

void Sampling::PrintSummary() {
    if (gTaken.load() == 0 && gLost.load() == 0) return;
    std::string failed;
    std::uint64_t failedAll = 0;
    for (int i = 0; i <= kCauseCount; ++i) {
        const std::uint64_t n = gFailed[static_cast<std::size_t>(i)].load();
        if (n == 0) continue;
        failedAll += n;
        failed += (failed.empty() ? "" : ", ") + std::to_string(n) + " " + (i < kCauseCount ? kCauses[i] : "other");
    }
    std::string line = "sampling: " + std::to_string(gRaised.load()) + " samples raised at " +
                       std::to_string(SampleClocks::Hz()) + (SampleClocks::Wall() ? " Hz of wall-clock time" : " Hz of CPU time");
    if (!SampleClocks::Wall()) {
        // In CPU mode, the clock and the signals; the periods a timer missed are counted,
        // not raised.
        const int refused = SampleClocks::PerfRefused();
        line += !SampleClocks::PerfChosen()  ? " (POSIX CPU timers, MARTINI_SAMPLING_CLOCK=timer"
                : refused == 0 ? " (perf task-clock"
                               : std::string(" (POSIX CPU timers: perf_event_open refused, ") + std::strerror(refused);
        line += ", " + std::to_string(gTaken.load()) + " signals";
        if (const auto missed = gMissed.load(); missed != 0) line += ", " + std::to_string(missed) + " periods missed";
        line += ")";
    }
    if (failedAll != 0) {
        line += "; " + std::to_string(failedAll) + " could not be walked by AsyncGetCallTrace (" + failed + "), " +
                std::to_string(gNativeNamed.load()) + " of them named by their native frames or code blob";
    }
    if (const auto own = gJvmOwn.load(); own != 0) {
        line += "; " + std::to_string(own) + " in threads with native frames only (the JVM's own)";
    }
    if (const auto native = gWithNative.load(); native != 0) {
        line += "; " + std::to_string(native) + " with native frames on top (frame pointers, ELF symbols)";
    }
    if (const auto kernel = gWithKernel.load(); kernel != 0) {
        line += "; " + std::to_string(kernel) + " with kernel frames on top (perf call chains, /proc/kallsyms)";
    }
    if (const auto retried = gWalkedFromCaller.load(); retried != 0) {
        line += "; " + std::to_string(gRecovered.load()) + " of " + std::to_string(retried) +
                " walked from the caller of an unknown frame (" + std::to_string(gNamedByAddress.load()) +
                " of those frames named from their compiled code's address)";
    }
    if (const auto lost = gLost.load(); lost != 0) line += "; " + std::to_string(lost) + " lost (buffer full)";
    if (const auto truncated = gTruncated.load(); truncated != 0) {
        line += "; " + std::to_string(truncated) + " stacks cut at " + std::to_string(kMaxFrames) + " frames";
    }
    if (const auto noId = gNoId.load(); noId != 0) line += "; " + std::to_string(noId) + " in threads without an id";
    line += debugFlag_ != nullptr
                ? "; debug information at every instruction from DebugNonSafepoints, set through HotSpot's flag table"
                : "; debug information at every instruction from CompiledMethodLoad events";
    char cost[192];
    std::snprintf(cost, sizeof cost,
                  "; CPU spent: %.1f ms in the signal handler, %.1f ms on the sampler thread, %.1f ms making jmethodIDs",
                  static_cast<double>(gHandlerNs.load()) / 1e6, static_cast<double>(gSamplerCpuNs.load()) / 1e6,
                  static_cast<double>(gJmethodIdNs.load()) / 1e6);
    line += cost;
    core::LogLine(line);
    WarnOfMissedPeriods();
}

// The rate asked for was not met: the timers fire at the kernel's tick, so a period
// shorter than the tick is missed (an overrun), and the samples stand for less time
// than the thread used. Said when more than 5% of the periods were missed.
void Sampling::WarnOfMissedPeriods() {
    const std::uint64_t missed = gMissed.load(), taken = gTaken.load();
    if (SampleClocks::Wall() || missed == 0 || missed * 20 < taken + missed) return;
    const unsigned hz = SampleClocks::Hz();
    const auto got = static_cast<unsigned>(static_cast<double>(hz) * static_cast<double>(taken) /
                                           static_cast<double>(taken + missed));
    const int refused = SampleClocks::PerfRefused();
    const std::string why = !SampleClocks::PerfChosen() ? "MARTINI_SAMPLING_CLOCK=timer chose the POSIX CPU timers"
                            : refused != 0 ? std::string("perf events were refused (") + std::strerror(refused) +
                                                 "), and the POSIX CPU timers took their place"
                                           : "the POSIX CPU timers were used";
    core::LogF("sampling: warning: asked for %u Hz of CPU time, got about %u Hz: %s, which fire at the kernel's "
               "tick; %llu periods were missed and are not counted as samples (times from samples are that much "
               "low). A lower rate (sample=%u) or perf events (perf_event_paranoid) give true rates",
               hz, got, why.c_str(), static_cast<unsigned long long>(missed), got);
}

}  // namespace martini::jvm
