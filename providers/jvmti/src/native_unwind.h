// The sampler's native unwinder, for the signal handler: the native frames on top of a
// sampled thread's stack (the frame-pointer chain, up to the JVM's code), and a walk
// AsyncGetCallTrace gave up on retried from the interrupted frame's caller.
//
// Owns: each thread's stack top (thread-local, noted outside the handler at the
// thread's start and at Sampling::Start), which bounds every read of the stack.
// Locks: none; everything here is async-signal-safe except NoteStackTop.
#pragma once

#include "sampling_shared.h"

#include <cstdint>

namespace martini::jvm {

class NativeUnwind {
public:
    // Native frames are walked unless MARTINI_SAMPLING_NATIVE=0 (for measuring their
    // cost). Read once outside the handler first (Sampling::Start).
    static bool Chosen();
    // The calling thread's stack top; outside the handler (ThreadStarted, Start).
    static void NoteStackTop();
    // Async-signal-safe: the sample's native frames (RawSample::native) from the
    // interrupted context; none when `s.pc` is in the JVM's code.
    static void Walk(sampling::RawSample &s, void *ucontext);
    // Async-signal-safe: AGCT gave up on a frame not fully built (-5, -6); `trace`
    // walked again from the caller, the interrupted frame left unknown on top.
    static void WalkFromCaller(sampling::AgctFn agct, sampling::AgctTrace &trace, void *ucontext);
};

}  // namespace martini::jvm
