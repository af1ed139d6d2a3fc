// Coverage: block and branch counts of the methods the clients' coverage filters want
// (IMpi::RequestCoverage), kept inside the JVM. Each covered method gets a coverage
// index. The rewriter (classfile/instrumenter.h) has the method ask
// martini.runtime.Probes.counters for the calling thread's counters of that index once
// per call (plain Java, compiled inline), keep them in a local, and add to them inline
// at each block start and around each conditional branch: counting never leaves the
// method's code, never goes through JNI, and loses no add (each thread adds to arrays of
// its own). Probes.totals sums the threads' counts, ended threads' too, when a client
// asks (GetCoverageInfo): counts outlive their classes (a class that unloads keeps its
// counts), and a class retransformed again (attach, detach) keeps its index when its
// code is the same.
//
// Locks: mutex_ (the methods' indexes and layouts), never held while Java code runs.
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
    // VMInit (or attach), before any class gets probes: finds Probes.totals. False
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
        std::uint32_t index = 0;  // the coverage index
        CoverageLayout layout;
        std::vector<LineEntry> lines;  // the original code's line table
    };
    // Classes never covered: the probes' own code runs them (Thread.currentThread and
    // getId), or HotSpot treats them specially (Object).
    static bool Never(const std::string &internalName);
    // The method's counts summed over the threads (Probes.totals); false when Java fails.
    static bool Totals(const Counted &c, std::vector<std::uint64_t> &totals) noexcept;

    static inline bool wanted_ = false;
    static inline jclass probes_ = nullptr;     // a global reference
    static inline jmethodID totals_ = nullptr;  // Probes.totals(II)[J
    static inline std::mutex mutex_;
    static inline std::uint32_t next_ = 0;                        // the next coverage index (mutex_)
    static inline std::unordered_map<TId, Counted> reserved_;     // by method id, once chosen (mutex_)
    static inline std::unordered_set<TId> counted_;               // methods whose probes are in place (mutex_)
};

}  // namespace martini::jvm
