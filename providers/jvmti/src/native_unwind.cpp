#include "native_unwind.h"

#include "code_map.h"
#include "sample_clocks.h"

#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace martini::jvm {

using namespace sampling;

namespace {

// The top of the calling thread's stack (set at ThreadStarted and Start, outside the
// handler); 0 when not known. Bounds the retry below.
constinit thread_local std::uintptr_t tStackTop __attribute__((tls_model("initial-exec"))) = 0;

// Learned stacks, by thread id modulo the table: the writer (the sampler thread) clears
// the id, writes the bounds, then sets the id; a reader takes the bounds only when the
// id matches before and after reading them.
constexpr std::size_t kLearned = 1024;
std::array<std::atomic<pid_t>, kLearned> gLearnedTid{};
std::array<std::atomic<std::uintptr_t>, kLearned> gLearnedLow{}, gLearnedTop{};

// The top of the learned stack of `tid` when `sp` lies in it, else 0. Async-signal-safe.
std::uintptr_t LearnedTop(pid_t tid, std::uintptr_t sp) {
    const std::size_t i = static_cast<std::size_t>(tid) % kLearned;
    if (gLearnedTid[i].load(std::memory_order_acquire) != tid) return 0;
    const std::uintptr_t low = gLearnedLow[i].load(std::memory_order_acquire);
    const std::uintptr_t top = gLearnedTop[i].load(std::memory_order_acquire);
    if (gLearnedTid[i].load(std::memory_order_acquire) != tid) return 0;
    return sp >= low && sp < top ? top : 0;
}

// A frame's saved frame pointer and return address. Inside the thread's stack (its top
// known: Java threads, from their ThreadStart) a plain read; otherwise (the JVM's own
// threads, which have none) through process_vm_readv, a system call that fails where
// a read would fault. Async-signal-safe.
__attribute__((no_sanitize("address"))) bool ReadFrame(std::uintptr_t fp, std::uintptr_t top, std::uintptr_t frame[2]) {
    if (top != 0) {
        if (fp + 16 > top) return false;
        const auto *slots = reinterpret_cast<const std::uintptr_t *>(fp);
        frame[0] = slots[0];
        frame[1] = slots[1];
        return true;
    }
    iovec local{frame, 16};
    iovec remote{reinterpret_cast<void *>(fp), 16};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 16;
}

}  // namespace

bool NativeUnwind::Dwarf() {
    static const bool dwarf = [] {
        const char *unwind = std::getenv("MARTINI_SAMPLING_UNWIND");
        const bool chosen = unwind == nullptr || std::strcmp(unwind, "fp") != 0;
        // libunwind's cache of the unwind rules by address (127 by default): large
        // enough for every thread's frames, so that a walk rarely parses .eh_frame.
        if (chosen) unw_set_cache_size(unw_local_addr_space, 16384, 0);
        return chosen;
    }();
    return dwarf;
}

bool NativeUnwind::Chosen() {
    static const bool chosen = [] {
        const char *native = std::getenv("MARTINI_SAMPLING_NATIVE");
        return native == nullptr || std::strcmp(native, "0") != 0;
    }();
    return chosen;
}

void NativeUnwind::NoteStackTop() {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void *base = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &base, &size) == 0) tStackTop = reinterpret_cast<std::uintptr_t>(base) + size;
    pthread_attr_destroy(&attr);
}

void NativeUnwind::LearnStackTop(pid_t tid, std::uintptr_t sp) {
    std::FILE *f = std::fopen("/proc/self/maps", "re");
    if (f == nullptr) return;
    char line[512];
    unsigned long long low = 0, top = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr) {
        if (std::sscanf(line, "%llx-%llx", &low, &top) == 2 && sp >= low && sp < top) found = true;
    }
    std::fclose(f);
    if (!found) return;
    const std::size_t i = static_cast<std::size_t>(tid) % kLearned;
    gLearnedTid[i].store(0, std::memory_order_release);
    gLearnedLow[i].store(static_cast<std::uintptr_t>(low), std::memory_order_release);
    gLearnedTop[i].store(static_cast<std::uintptr_t>(top), std::memory_order_release);
    gLearnedTid[i].store(tid, std::memory_order_release);
}

void NativeUnwind::ForgetStackTop(pid_t tid) {
    const std::size_t i = static_cast<std::size_t>(tid) % kLearned;
    pid_t expected = tid;
    gLearnedTid[i].compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
}

// AGCT gives up (-5, -6) when the interrupted frame is not fully built (a method's
// prologue or epilogue, a stub: JDK-8178287). Walked again from its caller, as
// async-profiler does: first as if the signal came right at a call (the return
// address on top of the stack), then through the frame pointer, each only when the
// stack slots read lie inside this thread's stack and the address found there is in
// code the JVM reported (a compiled method alive, the interpreter, a stub): AGCT
// must not be handed an address that is not a return address into live code. The frame the thread was in is
// left as an unknown frame (method 0) on top, so its time stays visible and is not
// given to the caller. The registers are put back before the handler returns.
void NativeUnwind::WalkFromCaller(const AgctFn agct, AgctTrace &trace, void *ucontext) {
#if defined(__x86_64__)
    const std::uintptr_t top = tStackTop;
    if (top == 0 || ucontext == nullptr) return;
    auto *uc = static_cast<ucontext_t *>(ucontext);
    greg_t &rip = uc->uc_mcontext.gregs[REG_RIP], &rsp = uc->uc_mcontext.gregs[REG_RSP],
           &rbp = uc->uc_mcontext.gregs[REG_RBP];
    const greg_t pc = rip, sp = rsp, fp = rbp;
    const auto usp = static_cast<std::uintptr_t>(sp), ufp = static_cast<std::uintptr_t>(fp);
    auto retry = [&](greg_t newPc, greg_t newSp, greg_t newFp) {
        rip = newPc;
        rsp = newSp;
        rbp = newFp;
        trace.frames[0] = {kUnknownFrameLine, nullptr};
        AgctTrace again{trace.env, 0, trace.frames + 1};
        agct(&again, kMaxFrames - 1, ucontext);
        if (again.numFrames > 0) trace.numFrames = again.numFrames + 1;
    };
    if (usp % 8 == 0 && usp + 8 <= top) {
        const greg_t ret = *reinterpret_cast<const greg_t *>(usp);
        if (CodeMap::IsCode(static_cast<std::uintptr_t>(ret))) retry(ret, sp + 8, fp);
    }
    if (trace.numFrames <= 0 && ufp % 8 == 0 && ufp > usp && ufp + 16 <= top) {
        const greg_t ret = reinterpret_cast<const greg_t *>(ufp)[1];
        if (CodeMap::IsCode(static_cast<std::uintptr_t>(ret))) retry(ret, fp + 16, reinterpret_cast<const greg_t *>(ufp)[0]);
    }
    rip = pc;
    rsp = sp;
    rbp = fp;
#else
    (void)agct, (void)trace, (void)ucontext;
#endif
}

namespace {

// libjvm's text, where frame pointers are kept (set at Start, read by the handler).
std::atomic<std::uintptr_t> gJvmTextLow{0}, gJvmTextHigh{0};

bool InJvmText(std::uintptr_t pc) {
    return pc >= gJvmTextLow.load(std::memory_order_relaxed) && pc < gJvmTextHigh.load(std::memory_order_relaxed);
}

// The frame-pointer chain from (sp, fp) (each frame above the one before, within 16 MiB
// of the stack pointer) until a return address is in the JVM's code.
void FramePointerWalk(RawSample &s, std::uintptr_t sp, std::uintptr_t fp) {
    // Without its stack's top the walk reads through process_vm_readv, a system call
    // per frame, until the sampler thread has learned the stack from this sample.
    const std::uintptr_t top = tStackTop != 0 ? tStackTop : LearnedTop(s.tid, sp);
    if (s.sp == 0) s.sp = sp;
    s.stackTopKnown = top != 0;
    const std::uintptr_t limit = sp + (std::uintptr_t{16} << 20);
    std::uintptr_t frame[2];
    while (s.numNative < kMaxNativeFrames && fp % 8 == 0 && fp >= sp && fp < limit && ReadFrame(fp, top, frame)) {
        const std::uintptr_t ret = frame[1];
        if (ret == 0 || CodeMap::IsCode(ret)) break;
        s.native[s.numNative++] = ret;
        sp = fp + 16;
        fp = frame[0];
    }
}

}  // namespace

void NativeUnwind::NoteJvmText() {
    Dl_info info{};
    void *symbol = dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
    if (symbol == nullptr || dladdr(symbol, &info) == 0) return;
    struct Found {
        std::uintptr_t base, low = 0, high = 0;
    } found{reinterpret_cast<std::uintptr_t>(info.dli_fbase)};
    dl_iterate_phdr(
        [](dl_phdr_info *object, std::size_t, void *data) {
            auto &f = *static_cast<Found *>(data);
            if (object->dlpi_addr != f.base) return 0;
            for (int i = 0; i < object->dlpi_phnum; ++i) {
                const ElfW(Phdr) &ph = object->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
                f.low = object->dlpi_addr + ph.p_vaddr;
                f.high = f.low + ph.p_memsz;
            }
            return 1;
        },
        &found);
    gJvmTextLow.store(found.low, std::memory_order_relaxed);
    gJvmTextHigh.store(found.high, std::memory_order_relaxed);
}

// The interrupted native frame's callers from the libraries' unwind tables (.eh_frame,
// through libunwind: its local unwinding is async-signal-safe) until one is in libjvm,
// which keeps frame pointers: from there the frame-pointer chain, which costs a read
// per frame where libunwind's rules cost far more (a stack of libjvm's own, a JIT
// compiler's or a waiting thread's, is deep). A frame of code without unwind
// information is left to libunwind's frame-pointer heuristics, which check each
// address before reading it. Stops at the JVM's code, where the Java frames begin.
void NativeUnwind::WalkDwarf(RawSample &s, void *ucontext) {
#if defined(__x86_64__)
    unw_cursor_t cursor;
    if (unw_init_local2(&cursor, static_cast<unw_context_t *>(ucontext), UNW_INIT_SIGNAL_FRAME) != 0) return;
    while (s.numNative < kMaxNativeFrames && unw_step(&cursor) > 0) {
        unw_word_t ip = 0, sp = 0, fp = 0;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0 || CodeMap::IsCode(ip)) break;
        s.native[s.numNative++] = ip;
        if (InJvmText(ip) && unw_get_reg(&cursor, UNW_REG_SP, &sp) == 0 &&
            unw_get_reg(&cursor, UNW_X86_64_RBP, &fp) == 0) {
            FramePointerWalk(s, sp, fp);
            return;
        }
    }
#else
    (void)s, (void)ucontext;
#endif
}

// The native frames on top of the stack (RawSample::native): the interrupted address
// when it is not in the JVM's code, then its callers (above), until one is in the
// JVM's code: there the Java frames AGCT walks begin. With the frame-pointer chain
// alone (MARTINI_SAMPLING_UNWIND=fp, and wall-clock mode), code built without frame
// pointers gives a wrong caller or none; the sampler thread keeps the frames up to the
// first address that lies in no library (sampling_drain.cpp).
void NativeUnwind::Walk(RawSample &s, void *ucontext) {
    s.numNative = 0;
    s.sp = 0;
#if defined(__x86_64__)
    if (ucontext == nullptr || !Chosen() || CodeMap::IsCode(s.pc)) return;
    s.native[s.numNative++] = s.pc;
    // In wall-clock mode most threads wait inside libc, where the unwind tables cost
    // several times the frame-pointer chain for what little they add: the chain there.
    if (Dwarf() && !SampleClocks::Wall() && !InJvmText(s.pc)) {
        WalkDwarf(s, ucontext);
        return;
    }
    const auto *uc = static_cast<const ucontext_t *>(ucontext);
    FramePointerWalk(s, static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]),
                     static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RBP]));
#else
    (void)ucontext;
#endif
}

}  // namespace martini::jvm
