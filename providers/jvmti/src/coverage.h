// Coverage: block and branch counts of the methods the clients' coverage filters want
// (IMpi::RequestCoverage), kept inside the JVM. The rewriter puts a call to
// martini.runtime.Probes.hit(counter) at each block start and around each conditional
// branch (classfile/instrumenter.h); hit is plain Java, compiled inline into the
// covered code as a plain add to the thread's own stripe of the counters in native
// memory (an atomic add to the shared stripe for threads beyond the stripes), so
// counting never leaves compiled code, never goes through JNI and loses no add. The counters are read here
// when a client asks (GetCoverageInfo): they outlive their classes (a class that
// unloads keeps its counts) and a class retransformed again (attach, detach) keeps
// its counters when its code is the same.
//
// Locks: mutex_ (the methods' counter ranges and layouts); the counters themselves are
// atomics written by Java code and read with atomic loads.
#pragma once

#include "classes.h"
#include "martini/core/provider.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace martini::jvm {

class Coverage {
public:
    // Agent_OnLoad, after the clients' MPICL_Instantiate: some client wants coverage.
    static void Decide();
    static bool Wanted() { return wanted_; }
    // The counters' probe: Probes.hit; with MARTINI_COVERAGE_COUNTERS=plain hitPlain
    // (one shared plain add: not exact under threads), =none hitNone (a call that counts
    // nothing): for measuring what exactness and the count cost beside the call.
    static Probe CounterProbe() { return counterProbe_; }
    // VMInit (or attach), before any class gets probes: maps the counters and hands
    // them and jdk.internal.misc.Unsafe (exported to Probes' module) to Probes. False
    // (said) when that fails: no coverage.
    static bool Start(JNIEnv *jni, jclass probes);
    // The rewriter's coverage selector for a class being loaded (empty when not
    // wanted): asks the clients' filters once per method and reserves its counters.
    static CoverageSelector Selector(ClassLoad &load);
    // After the rewrite: the methods that got their probes are counted from now on.
    static void Record(const ClassLoad &load, const InstrumentResult &result);
    // A class loaded before the probes existed: whether a client covers one of its
    // methods (then it is retransformed).
    static bool AskAbout(jclass klass, const std::string &internalName, const std::vector<DeclaredMethod> &methods);
    // Provider::DescribeCoverage.
    static TResult Describe(TId method, core::CoverageFacts &facts) noexcept;

private:
    struct Counted {
        std::uint32_t first = 0;  // the first counter
        CoverageLayout layout;
        std::vector<LineEntry> lines;  // the original code's line table
    };
    // Classes never covered: the probes' own code runs them (Thread.currentThread and
    // getId, jdk.internal.misc.Unsafe), or HotSpot treats them specially (Object).
    static bool Never(const std::string &internalName);

    // Probes' layout (checked at Start): kStripes + 1 stripes of kMaxCounters counters,
    // stripe 0 shared (atomic adds), the others each one thread's (plain adds).
    static constexpr std::uint64_t kMaxCounters = std::uint64_t{1} << 24;
    static constexpr std::uint64_t kStripes = 16;
    static constexpr std::uint64_t kMappedBytes = (kStripes + 1) * kMaxCounters * sizeof(std::uint64_t);
    // A counter's total: the sum over the stripes.
    static std::uint64_t Total(std::uint64_t counter) noexcept;
    static inline bool wanted_ = false;
    static inline Probe counterProbe_ = Probe::kHit;
    static inline std::uint64_t *counters_ = nullptr;
    static inline std::mutex mutex_;
    static inline std::uint64_t next_ = 0;                        // the next free counter (mutex_)
    static inline std::unordered_map<TId, Counted> reserved_;     // by method id, once chosen (mutex_)
    static inline std::unordered_set<TId> counted_;               // methods whose probes are in place (mutex_)
    static inline bool fullSaid_ = false;                         // (mutex_)
};

}  // namespace martini::jvm
