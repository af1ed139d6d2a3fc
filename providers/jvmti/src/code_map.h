// Where the JVM's code is, for the sampler: whether an address lies in code the JVM
// made (a compiled method alive, the interpreter, a stub), asked in the signal handler
// before a walk is retried from a caller or the native walk stops; and which compiled
// method an address lies in, asked by the sampler thread to name a frame AGCT could
// not name.
//
// Where HotSpot's tables can be read (hotspot.h) they answer both: the code cache's
// bounds and its segment map. Otherwise the JVMTI code events (CompiledMethodLoad and
// DynamicCodeGenerated, through Sampling::CodeLoaded) fill this map: a bitmap of live
// code (one bit per 32 bytes of a 2 GiB window around the first code reported) for
// the handler, and the ranges by start address with their methods for the sampler
// thread.
//
// Owns: the bitmap (mapped once, never unmapped) and the ranges.
// Locks: mutex_ guards ranges_ (the code events' threads and the sampler thread; never
// the signal handler); the bitmap is atomics, read without a lock.
#pragma once

#include <jvmti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace martini::jvm {

class CodeMap {
public:
    // Agent_OnLoad, before any other call: HotSpot's tables answer MethodAt (true) or
    // the code events' ranges do.
    static void UseHotspotTables(bool on) { hotspotTables_ = on; }
    // Async-signal-safe, lock-free: whether `pc` lies in the JVM's code.
    static bool IsCode(std::uintptr_t pc);
    // A code event's range (any thread): `method` the compiled method's, null for the
    // interpreter and stubs.
    static void Loaded(std::uintptr_t start, std::size_t size, jmethodID method);
    static void Unloaded(std::uintptr_t start);
    // The sampler thread: the compiled method whose code holds `pc`, or null.
    static jmethodID MethodAt(std::uintptr_t pc);
    // Sampling::Stop: everything known is forgotten (unloads are not seen from then on).
    static void Clear();

private:
    static void Mark(std::uintptr_t start, std::size_t size, bool live);

    static constexpr std::uintptr_t kGrain = 32;
    static constexpr std::uintptr_t kWindow = std::uintptr_t{1} << 31;
    static inline bool hotspotTables_ = false;
    static inline std::atomic<std::uintptr_t> base_{0};
    static inline std::atomic<std::uint8_t> *bits_ = nullptr;  // kWindow / kGrain bits, mapped on first use
    struct Range {
        std::size_t size;
        jmethodID method;
    };
    static inline std::mutex mutex_;  // ranges_
    static inline std::map<std::uintptr_t, Range> ranges_;  // by start address
};

}  // namespace martini::jvm
