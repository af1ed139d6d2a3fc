// Per-event cost of real clients behind the core: cgprof in counts, time and sample mode,
// callcount, and bench/clients/count_only (the framework's own cost), each loaded from
// its shared library exactly as a runtime loads it. Also the timestamp clocks.
//
//   <build>/bench/client_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//     --benchmark_report_aggregates_only=true
// Client libraries are found through MARTINI_BENCH_CLIENTS (the build's clients/ and
// bench/clients/ directories, ':'-separated), set by meson's benchmark().
//
// One iteration raises 6 events: a call of m1 that calls m2 and then m3 (enter and
// leave each), the way a tight loop in a program looks; items/s counts events.
#include "martini/core/clock.h"
#include "martini/core/core.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

using namespace Martini::MPI;
using martini::core::Clock;
using martini::core::Core;
using martini::core::Provider;
using martini::core::RuntimeDescription;

namespace {

class BenchProvider final : public Provider {
public:
    RuntimeDescription Describe() const override { return {RT_UNKNOWN, "client_bench", "0"}; }
    bool CanRaise(TEventType e) const noexcept override {
        return e == EV_METHOD_ENTER || e == EV_METHOD_LEAVE || e == EV_VM_INIT || e == EV_VM_SHUTDOWN ||
               e == EV_SAMPLE_HIT;
    }
};

std::string FindClient(const std::string &name) {
    const char *env = std::getenv("MARTINI_BENCH_CLIENTS");
    std::string dirs = env ? env : "";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        const std::size_t end = dirs.find(':', start);
        const std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
        for (const std::string &p : {dir + "/lib" + name + ".so", dir + "/" + name + "/lib" + name + ".so"}) {
            if (::access(p.c_str(), R_OK) == 0) return p;
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return "";
}

struct Setup {
    BenchProvider provider;
    Core core{provider};
    BitSet enterWanted = 0, leaveWanted = 0;
    bool ok = false;

    Setup(const std::string &client, const std::string &options) {
        martini::core::ClientSpec spec{client, FindClient(client), options};
        if (spec.path.empty()) return;
        if (!core.LoadClient(spec).ok()) return;
        core.FinishInit();
        Clock::Calibrate();
        enterWanted = core.RequestedData(EV_METHOD_ENTER);
        leaveWanted = core.RequestedData(EV_METHOD_LEAVE);
        ok = true;
    }
};

// One MethodEnter or MethodLeave as a provider raises it: the timestamp only when some
// client asked for it.
template <class Observer>
inline void Raise(Core &core, BitSet wanted, TId method) {
    typename Observer::TEventData d;
    d.methodId = method;
    d.threadId = 1;
    d.validData = DR_METHOD_ID | DR_THREAD_ID;
    if (wanted & DR_CPU_TIMESTAMP) {
        d.uiCpuTimestamp = Clock::NowNs();
        d.validData |= DR_CPU_TIMESTAMP;
    }
    core.Raise<Observer>(d);
}
inline void Enter(Core &core, BitSet wanted, TId method) { Raise<IMethodEnterEventObserver>(core, wanted, method); }
inline void Leave(Core &core, BitSet wanted, TId method) { Raise<IMethodLeaveEventObserver>(core, wanted, method); }

void BM_Client(benchmark::State &state, const char *client, const char *options) {
    // Kept for the process's life: clients may hold on to the core until exit.
    static std::unique_ptr<Setup> keep[8];
    static int used = 0;
    auto setup = std::make_unique<Setup>(client, options);
    if (!setup->ok) {
        state.SkipWithError((std::string("cannot load ") + client + " (set MARTINI_BENCH_CLIENTS)").c_str());
        return;
    }
    Core &core = setup->core;
    const BitSet ew = setup->enterWanted, lw = setup->leaveWanted;
    for (auto _ : state) {
        Enter(core, ew, 11);
        Enter(core, ew, 12);
        Leave(core, lw, 12);
        Enter(core, ew, 13);
        Leave(core, lw, 13);
        Leave(core, lw, 11);
    }
    state.SetItemsProcessed(state.iterations() * 6);
    if (used < 8) keep[used++] = std::move(setup);
}

BENCHMARK_CAPTURE(BM_Client, count_only, "count_only", "");
BENCHMARK_CAPTURE(BM_Client, callcount, "callcount", "top=1,out=/dev/null");
BENCHMARK_CAPTURE(BM_Client, cgprof_counts, "cgprof", "counts,top=0,formats=none");
BENCHMARK_CAPTURE(BM_Client, cgprof_time, "cgprof", "top=0,formats=none,trace=0");

// cgprof's sample mode: one SampleHit a iteration, its stack one of 4,096 of 20 to 60
// frames from 2,000 methods, shared from the root with a few others (as a JIT
// compiler's stacks are), from four threads in turn: the tree's lookups, on the
// sampler thread.
void BM_CgprofSamples(benchmark::State &state) {
    static std::unique_ptr<Setup> keep;
    auto setup = std::make_unique<Setup>("cgprof", "sample=1000,top=0,formats=none,trace=0");
    if (!setup->ok) {
        state.SkipWithError("cannot load cgprof (set MARTINI_BENCH_CLIENTS)");
        return;
    }
    constexpr std::size_t kStacks = 4096;
    std::vector<std::vector<SStackEntry>> stacks(kStacks);
    std::uint64_t seed = 88172645463325252ull;
    auto next = [&seed] {  // xorshift64
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        return seed;
    };
    for (std::size_t k = 0; k < kStacks; ++k) {
        const std::size_t depth = 20 + next() % 41;
        const std::size_t shared = next() % depth;  // the frames from the root shared with stack k / 8's
        const std::vector<SStackEntry> &like = stacks[k / 8];
        std::vector<SStackEntry> &stack = stacks[k];
        for (std::size_t d = 0; d < depth; ++d) {  // root first here, reversed below
            const std::size_t from = like.size() - 1 - std::min(d, like.size() - 1);
            const TId method = k >= 8 && d < shared && d < like.size() ? like[from].methodId : 100 + next() % 2000;
            stack.push_back({method, ~0u, static_cast<unsigned>(1 + next() % 50)});
        }
        std::reverse(stack.begin(), stack.end());
    }
    Core &core = setup->core;
    std::size_t k = 0;
    for (auto _ : state) {
        SSampleHitEventData d;
        d.threadId = 1 + k % 4;
        d.validData = DR_THREAD_ID | DR_VM_CALL_STACK;
        std::vector<SStackEntry> &stack = stacks[k++ % kStacks];
        d.stackTrace.entries = stack.data();
        d.stackTrace.uiSize = static_cast<unsigned>(stack.size());
        core.Raise<ISampleHitEventObserver>(d);
    }
    state.SetItemsProcessed(state.iterations());
    keep = std::move(setup);
}
BENCHMARK(BM_CgprofSamples);

void BM_ClockTsc(benchmark::State &state) {
    Clock::Calibrate();
    for (auto _ : state) benchmark::DoNotOptimize(Clock::NowNs());
    state.SetLabel(Clock::UsesTsc() ? "rdtsc" : "clock_gettime (no invariant TSC)");
}
void BM_ClockGettime(benchmark::State &state) {
    for (auto _ : state) benchmark::DoNotOptimize(Clock::MonotonicNs());
}
void BM_SteadyClock(benchmark::State &state) {
    for (auto _ : state) benchmark::DoNotOptimize(std::chrono::steady_clock::now());
}
BENCHMARK(BM_ClockTsc);
BENCHMARK(BM_ClockGettime);
BENCHMARK(BM_SteadyClock);

}  // namespace

BENCHMARK_MAIN();
