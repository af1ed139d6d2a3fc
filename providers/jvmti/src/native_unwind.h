// The sampler's native unwinder, for the signal handler: the native frames on top of a
// sampled thread's stack (the unwind tables through libunwind up to libjvm, then the
// frame-pointer chain, up to the JVM's code), and a walk
// AsyncGetCallTrace gave up on retried from the interrupted frame's caller.
//
// Owns: each thread's stack top (thread-local, noted outside the handler at the
// thread's start and at Sampling::Start), which bounds every read of the stack; and
// the stacks of threads that have no such note (the JVM's own threads, threads
// running before an attach), learned by the sampler thread from /proc/self/maps after
// a first sample, in a table of atomics the handler reads.
// Locks: none of its own; everything here is async-signal-safe except NoteStackTop,
// LearnStackTop, ForgetStackTop and NoteJvmText (outside the handler). libunwind keeps
// its cache of unwind rules under a lock of its own, taken with every signal blocked.
#pragma once

#include "sampling_shared.h"

#include <sys/types.h>

#include <cstdint>

namespace martini::jvm {

class NativeUnwind {
public:
    // Native frames are walked unless MARTINI_SAMPLING_NATIVE=0 (for measuring their
    // cost). Read once outside the handler first (Sampling::Start).
    static bool Chosen();
    // Their callers from the unwind tables (libunwind) in CPU mode, unless
    // MARTINI_SAMPLING_UNWIND=fp asks for the frame-pointer chain (wall-clock mode's).
    // Read once outside the handler first.
    static bool Dwarf();
    // Where libjvm's code is (its frames are walked by their frame pointers); at Start.
    static void NoteJvmText();
    // The calling thread's stack top; outside the handler (ThreadStarted, Start).
    static void NoteStackTop();
    // The sampler thread: the stack mapping holding `sp` (from /proc/self/maps) as
    // thread `tid`'s, for the walks of its later samples; forgotten when it ends.
    static void LearnStackTop(pid_t tid, std::uintptr_t sp);
    static void ForgetStackTop(pid_t tid);
    // Async-signal-safe: the sample's native frames (RawSample::native) from the
    // interrupted context; none when `s.pc` is in the JVM's code.
    static void Walk(sampling::RawSample &s, void *ucontext);
    // Async-signal-safe: AGCT gave up on a frame not fully built (-5, -6); `trace`
    // walked again from the caller, the interrupted frame left unknown on top.
    static void WalkFromCaller(sampling::AgctFn agct, sampling::AgctTrace &trace, void *ucontext);

private:
    static void WalkDwarf(sampling::RawSample &s, void *ucontext);
};

}  // namespace martini::jvm
