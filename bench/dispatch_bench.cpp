// Event dispatch micro-benchmarks: the cost of one MethodEnter event, the hottest event
// a profiler sees, from the provider's Core::Raise to the clients' observers.
//
// Everything is in one binary so that the ratios in docs/performance.md come from one
// run on one machine:
//   BM_MartiniRaise/N                 Raise<IMethodEnterEventObserver> to N observers,
//                                     each one its own client (N = 0, 1, 4, 16), on 1
//                                     and on 2 threads (the same Core for both threads).
//   BM_MartiniRaise_NobodyListening   a Core with no client at all.
//   BM_MartiniRaise_Filtered/N        N observers, but the provider passes interest 0
//                                     (every client's filter said no to the method).
//   BM_MartiniRaise_GroupDisabled/N   N observers, every client disabled EG_CALL_GRAPH.
//   BM_MartiniRaise_HalfInterested/16 16 observers, interest mask selects 8 of them.
//   BM_FrozenVector/N                 baseline: a std::vector<IMethodEnterEventObserver*>
//                                     fixed in advance, HandleEvent called in a loop.
//   BM_Signals2/N                     baseline: boost::signals2::signal with N slots.
//
// Built twice from this file (bench/meson.build). In dispatch_bench the observer's
// HandleEvent is defined below, so GCC inlines it into every loop (speculative
// devirtualization). In dispatch_bench_lib (MARTINI_BENCH_LIB_OBSERVERS) it forwards
// to an observer in a shared library of its own (bench_observer.cpp): one true
// indirect call per observer and event, in every case alike, as a real client's
// observer costs. The two binaries differ in nothing else.
//
// The Martini, vector and Signals2 cases call the very same observer objects (one
// CountingObserver class) with the same data struct, so they do the same work apart
// from the dispatch itself. Each benchmark counts the handler calls it caused and
// fails (SkipWithError) unless it is exactly the expected number per event; the
// "handlers" column shows it.
#include <MpiAPI.h>
#include <benchmark/benchmark.h>

#include <array>
#include <boost/signals2/signal.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "martini/core/core.h"

namespace {

using namespace Martini::MPI;
using martini::core::ClientMask;
using martini::core::Core;
using martini::core::kAllClients;
using martini::core::Provider;
using martini::core::RuntimeDescription;

// Threads that raise events at once (the 2-thread benchmarks). A power of two.
constexpr unsigned kMaxThreads = 2;
// Observer objects for every Core built below (1 + 4 + 16 + 1 + 16 = 38).
constexpr unsigned kPoolSize = 64;

// The observer every case calls. Per-thread counters (indexed by the event's thread
// id, as a real profiler keys its per-thread state) keep the 2-thread cases free of
// shared writes: the observer, not the dispatcher, would otherwise be what we measure.
// 128-byte spacing, not 64: the L2 prefetchers fetch cache lines in pairs.
#ifdef MARTINI_BENCH_LIB_OBSERVERS
}  // namespace
// From bench_observer.cpp: the next observer of its pool, and its count on a thread.
extern "C" IMethodEnterEventObserver *BenchLibObserverNext();
extern "C" std::uint64_t BenchLibObserverEvents(IMethodEnterEventObserver *observer, unsigned thread);
namespace {
class CountingObserver final : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | DR_THREAD_ID; }
    void HandleEvent(SMethodEnterEventData &data) override { target_->HandleEvent(data); }
    std::uint64_t Events(unsigned thread) const noexcept { return BenchLibObserverEvents(target_, thread); }

private:
    IMethodEnterEventObserver *target_ = BenchLibObserverNext();
};
#else
class CountingObserver final : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | DR_THREAD_ID; }
    void HandleEvent(SMethodEnterEventData &data) override {
        ++perThread_[data.threadId & (kMaxThreads - 1)].events;
    }
    std::uint64_t Events(unsigned thread) const noexcept { return perThread_[thread].events; }

private:
    struct alignas(128) Counter {
        std::uint64_t events = 0;
    };
    std::array<Counter, kMaxThreads> perThread_{};
};
#endif

// The provider: nothing but what Core needs to accept registrations.
class BenchProvider final : public Provider {
public:
    RuntimeDescription Describe() const override {
        return {RT_UNKNOWN, "dispatch_bench", "0"};
    }
    bool CanRaise(TEventType) const noexcept override { return true; }
};

BenchProvider gProvider;

// Instantiate functions are plain function pointers: each client takes the next
// observer of the pool.
std::array<CountingObserver, kPoolSize> gObservers;
unsigned gNextObserver = 0;

TResult InstantiateCountingClient(IMpi *mpi, TId clientId, const char * /*options*/) {
    if (gNextObserver == kPoolSize) return MRTE_ERROR_FAIL;
    return mpi->RegisterEvent(clientId, gObservers[gNextObserver++]);
}

[[noreturn]] void Die(const std::string &why) {
    std::fprintf(stderr, "dispatch_bench: %s\n", why.c_str());
    std::abort();
}

// One configuration: a Core with `n` clients of one observer each, and the two
// baselines over the same observer objects.
struct Dispatch {
    enum class Group { kEnabled, kDisabled };

    Dispatch(unsigned n, Group group) : core(gProvider) {
        for (unsigned i = 0; i < n; ++i) {
            const unsigned index = gNextObserver;
            const Core::LoadResult r =
                core.AddClient("bench-" + std::to_string(i), &InstantiateCountingClient, "");
            if (!r.ok()) Die(r.error);
            clients.push_back(r.clientId);
            observers.push_back(&gObservers[index]);
        }
        core.FinishInit();
        if (group == Group::kDisabled) {
            for (TId id : clients) {
                if (core.Mpi().DisableEventGroup(id, EG_CALL_GRAPH) != MRTE_RESULT_OK) {
                    Die("DisableEventGroup failed");
                }
            }
        }
        for (CountingObserver *o : observers) {
            vector.push_back(o);
            signal.connect([o](SMethodEnterEventData &data) { o->HandleEvent(data); });
        }
    }

    std::uint64_t Delivered(unsigned thread) const {
        std::uint64_t sum = 0;
        for (const CountingObserver *o : observers) sum += o->Events(thread);
        return sum;
    }

    Core core;
    std::vector<TId> clients;
    std::vector<CountingObserver *> observers;
    // Baseline A: the cheapest dispatch there is, a frozen list of observers.
    std::vector<IMethodEnterEventObserver *> vector;
    // Baseline B: a general-purpose signal/slot library.
    boost::signals2::signal<void(SMethodEnterEventData &)> signal;
};

// Every Core, built once, before the first timed loop, on whichever benchmark thread
// gets there first (a function-local static: the other thread waits for it).
struct Fixtures {
    Dispatch enabled0{0, Dispatch::Group::kEnabled};
    Dispatch enabled1{1, Dispatch::Group::kEnabled};
    Dispatch enabled4{4, Dispatch::Group::kEnabled};
    Dispatch enabled16{16, Dispatch::Group::kEnabled};
    Dispatch nobody{0, Dispatch::Group::kEnabled};
    Dispatch disabled1{1, Dispatch::Group::kDisabled};
    Dispatch disabled16{16, Dispatch::Group::kDisabled};

    Dispatch &Enabled(std::int64_t n) {
        switch (n) {
            case 0: return enabled0;
            case 1: return enabled1;
            case 4: return enabled4;
            case 16: return enabled16;
            default: Die("no Core with " + std::to_string(n) + " observers");
        }
    }
    Dispatch &Disabled(std::int64_t n) {
        switch (n) {
            case 1: return disabled1;
            case 16: return disabled16;
            default: Die("no group-disabled Core with " + std::to_string(n) + " observers");
        }
    }
};

Fixtures &All() {
    static Fixtures fixtures;
    return fixtures;
}

// The timed loop shared by every case: one event per iteration, this thread's own data
// struct. ClobberMemory after each event makes the compiler assume the observers and
// the tables changed, so it reloads everything and hoists nothing out of the loop.
template <class Raise>
void EventLoop(benchmark::State &state, const Dispatch &d, unsigned expectedHandlers,
               Raise raise) {
    const unsigned thread = static_cast<unsigned>(state.thread_index());
    if (thread >= kMaxThreads) Die("more benchmark threads than kMaxThreads");
    SMethodEnterEventData data;
    data.validData = DR_METHOD_ID | DR_THREAD_ID;
    data.methodId = 0x5eed;
    data.threadId = thread;
    benchmark::DoNotOptimize(&data);
    const std::uint64_t before = d.Delivered(thread);

    for (auto _ : state) {
        raise(data);
        benchmark::ClobberMemory();
    }

    const auto events = static_cast<std::uint64_t>(state.iterations());
    const std::uint64_t handlers = d.Delivered(thread) - before;
    state.counters["handlers"] = benchmark::Counter(
        static_cast<double>(handlers) / static_cast<double>(events ? events : 1),
        benchmark::Counter::kAvgThreads);
    if (handlers != events * expectedHandlers) {
        state.SkipWithError("wrong number of handler calls per event");
    }
}

// The interest mask as the provider would have it: a run-time value, not a constant
// the compiler could fold into Raise.
ClientMask Opaque(ClientMask mask) {
    benchmark::DoNotOptimize(mask);
    return mask;
}

void BM_MartiniRaise(benchmark::State &state) {
    Dispatch &d = All().Enabled(state.range(0));
    const ClientMask interested = Opaque(kAllClients);
    EventLoop(state, d, static_cast<unsigned>(state.range(0)),
              [&](SMethodEnterEventData &data) {
                  d.core.Raise<IMethodEnterEventObserver>(data, interested);
              });
}

void BM_MartiniRaise_NobodyListening(benchmark::State &state) {
    Dispatch &d = All().nobody;
    const ClientMask interested = Opaque(kAllClients);
    EventLoop(state, d, 0, [&](SMethodEnterEventData &data) {
        d.core.Raise<IMethodEnterEventObserver>(data, interested);
    });
}

void BM_MartiniRaise_Filtered(benchmark::State &state) {
    Dispatch &d = All().Enabled(state.range(0));
    const ClientMask interested = Opaque(0);  // no client wants this method
    EventLoop(state, d, 0, [&](SMethodEnterEventData &data) {
        d.core.Raise<IMethodEnterEventObserver>(data, interested);
    });
}

// Every other client interested (8 of 16): targets is neither everybody nor nobody, so
// Deliver takes its general loop (per-slot client test and validData masking).
void BM_MartiniRaise_HalfInterested(benchmark::State &state) {
    Dispatch &d = All().Enabled(state.range(0));
    const ClientMask interested = Opaque(0x5555555555555555u);
    EventLoop(state, d, static_cast<unsigned>(state.range(0) / 2),
              [&](SMethodEnterEventData &data) {
                  d.core.Raise<IMethodEnterEventObserver>(data, interested);
              });
}

void BM_MartiniRaise_GroupDisabled(benchmark::State &state) {
    Dispatch &d = All().Disabled(state.range(0));
    const ClientMask interested = Opaque(kAllClients);
    EventLoop(state, d, 0, [&](SMethodEnterEventData &data) {
        d.core.Raise<IMethodEnterEventObserver>(data, interested);
    });
}

void BM_FrozenVector(benchmark::State &state) {
    Dispatch &d = All().Enabled(state.range(0));
    EventLoop(state, d, static_cast<unsigned>(state.range(0)),
              [&](SMethodEnterEventData &data) {
                  for (IMethodEnterEventObserver *o : d.vector) o->HandleEvent(data);
              });
}

void BM_Signals2(benchmark::State &state) {
    Dispatch &d = All().Enabled(state.range(0));
    EventLoop(state, d, static_cast<unsigned>(state.range(0)),
              [&](SMethodEnterEventData &data) { d.signal(data); });
}

}  // namespace

BENCHMARK(BM_MartiniRaise_NobodyListening);
BENCHMARK(BM_MartiniRaise)->Arg(0)->Arg(1)->Arg(4)->Arg(16);
BENCHMARK(BM_FrozenVector)->Arg(1)->Arg(4)->Arg(16);
BENCHMARK(BM_Signals2)->Arg(1)->Arg(4)->Arg(16);
BENCHMARK(BM_MartiniRaise_Filtered)->Arg(1)->Arg(16);
BENCHMARK(BM_MartiniRaise_GroupDisabled)->Arg(1)->Arg(16);
BENCHMARK(BM_MartiniRaise_HalfInterested)->Arg(16);
// Two threads raising through the same Core at once. Time = wall time per event of
// the pair (throughput); CPU = CPU time per event on each thread (what the 1-thread
// figure is compared with).
BENCHMARK(BM_MartiniRaise_NobodyListening)->Threads(2);
BENCHMARK(BM_MartiniRaise)->Arg(0)->Arg(1)->Arg(4)->Arg(16)->Threads(2);
BENCHMARK(BM_FrozenVector)->Arg(1)->Arg(4)->Arg(16)->Threads(2);

BENCHMARK_MAIN();
