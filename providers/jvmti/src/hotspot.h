// HotSpot's own description of itself: the gHotSpotVMStructs and gHotSpotVMTypes
// tables libjvm exports for the Serviceability Agent (each entry a type, a field, its
// offset or a static's address). Read the way async-profiler reads them, for three
// things JVMTI offers only at a price:
//
//   - a diagnostic flag set at run time (DebugNonSafepoints: debug information at
//     every instruction of the code compiled from then on, which JVMTI gives only with
//     CompiledMethodLoad events, whose address maps HotSpot builds for every method);
//   - the code cache's address range (is an address the JVM's code?);
//   - the compiled method an address lies in (its jmethodID), from the code heap's
//     segment map.
//
// Every read of the JVM's memory after the tables goes through process_vm_readv on
// this process, so a stale pointer (a method unloaded meanwhile) answers "not found"
// instead of faulting. Nothing here is for a signal handler except InCodeCache.
// A JVM without these tables (not HotSpot) or with other field names answers false
// and null throughout: the callers then fall back to the JVMTI events.
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <string>

namespace martini::jvm::hotspot {

// Where a bool -XX flag's value lives (the JVM reads it where it decides: for
// DebugNonSafepoints, at each compilation), to read and set; null when the tables or
// the flag are not there.
bool *BoolFlag(const char *name);

// Reads the code cache's bounds (set once the JVM has made its code cache: from
// VMInit on). False when not known; InCodeCache then answers false.
bool FindCodeCache();
// Lock-free, async-signal-safe: whether `pc` lies inside the code cache (compiled
// methods, the interpreter, stubs; also space not used yet).
bool InCodeCache(std::uintptr_t pc);

// The compiled Java method (nmethod) `pc` lies in, as the jmethodID JVMTI made for it
// (every method has one: Sampling makes them at ClassPrepare); null when `pc` is not
// in one, or the method has no jmethodID. Not for a signal handler.
jmethodID CompiledMethodAt(std::uintptr_t pc);

// The name HotSpot gives the code blob `pc` lies in ("Interpreter", "StubRoutines (2)",
// "nmethod", an adapter's); "" when none or not readable. Not for a signal handler.
std::string CodeBlobNameAt(std::uintptr_t pc);

}  // namespace martini::jvm::hotspot
