// Coverage: block counts (IMpi::RequestCoverage) through Mono's own coverage
// instrumentation. mono_profiler_enable_coverage at init when a client asked; Mono's
// coverage filter, asked when the JIT compiles a method or considers inlining it, asks
// the clients' EG_COVERAGE filters once per method (Core::CoverageInterest); Mono then
// puts a counter at each sequence point of the method (the statements of its .mdb or
// .pdb; the IL's stack-empty points without symbols) and never inlines it. A client's
// GetCoverageInfo reads the counters with mono_profiler_get_coverage_data: one
// CEK_BLOCK per sequence point (IL offset, line, count). Mono counts no branch outcomes
// and no times.
//
// mscorlib's methods are covered only when the JIT does not inline (mono -O=-inline):
// Mono 6.8's JIT corrupts its heap compiling a covered mscorlib method that inlines
// others (docs/mono-provider.md#coverage); the module says so once and leaves them out.
//
// Locks: mutex_ guards the answers per method (written at JIT time, read when a client
// reads counts); Mono's own calls run outside it.
#pragma once

#include "vm.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace martini::mono {

class Coverage {
public:
    // Init, after the clients' MPICL_Instantiate: some client called RequestCoverage.
    static void Decide() { wanted_ = Vm::Core().CoverageRequested() != 0; }
    static bool Wanted() { return wanted_; }
    static void SetCallbacks(MonoProfilerHandle h);

    static BitSet Items() { return DR_COVERAGE_BLOCKS; }
    // The counts of a covered method, read now (Provider::DescribeCoverage). Any thread:
    // from one Mono does not know, the read runs on a thread of the provider's.
    static TResult Describe(TId method, core::CoverageFacts &f) noexcept;

private:
    enum class Answer { kNo, kYes, kRefused };  // kRefused: wanted, but mscorlib with inlining on
    static mono_bool Filter(MonoProfiler *, MonoMethod *m);
    static Answer Ask(MonoMethod *m);
    static void OnData(MonoProfiler *, const MonoProfilerCoverageData *d);
    static TResult Read(MonoMethod *m, core::CoverageFacts &f) noexcept;

    static inline bool wanted_ = false;
    static inline bool inlining_ = true;  // the JIT inlines (Mono's default): see above
    static inline std::atomic<bool> refusalSaid_{false};
    static inline std::mutex mutex_;
    static inline std::unordered_map<MonoMethod *, Answer> answers_;
};

}  // namespace martini::mono
