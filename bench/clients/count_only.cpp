// Benchmark client: counts MethodEnter/MethodLeave events in a per-thread counter and
// prints the total at shutdown. The least a call-graph client can do, so that
// bench/jvm_overhead.sh measures the framework's cost per call, not a client's.
// Option "time": also asks for DR_CPU_TIMESTAMP on every enter and leave (summed, so
// the provider must really produce them).
//
// The per-thread counter is reached through an initial-exec TLS pointer: one load, no
// __tls_get_addr call (a plain thread_local in a dlopen'ed library costs that call on
// every event, and one with a destructor also a wrapper call; perf on javac showed
// them as 6% of the profiled thread's samples).
#include <MpiAPI.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

using namespace Martini::MPI;

namespace {

bool g_time = false;

// One per thread that raised an event; summed at shutdown (running threads included).
struct Counts {
    std::atomic<unsigned long long> events{0};  // written by its thread only
    unsigned long long timeSum = 0;
};
std::mutex g_mutex;
std::vector<std::unique_ptr<Counts>> g_counts;
constinit thread_local Counts *t_counts __attribute__((tls_model("initial-exec"))) = nullptr;

Counts &Mine() {
    if (Counts *c = t_counts) return *c;
    std::lock_guard lock(g_mutex);
    g_counts.push_back(std::make_unique<Counts>());
    t_counts = g_counts.back().get();
    return *t_counts;
}

void Count(Counts &c) { c.events.store(c.events.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

class Enter : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | (g_time ? DR_CPU_TIMESTAMP : 0); }
    void HandleEvent(SMethodEnterEventData &d) override {
        Counts &c = Mine();
        Count(c);
        c.timeSum -= d.uiCpuTimestamp;
    }
} g_enter;
class Leave : public IMethodLeaveEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | (g_time ? DR_CPU_TIMESTAMP : 0); }
    void HandleEvent(SMethodLeaveEventData &d) override {
        Counts &c = Mine();
        Count(c);
        c.timeSum += d.uiCpuTimestamp;
    }
} g_leave;
class Shutdown : public IVmShutdownEventObserver {
public:
    void HandleEvent() override {
        unsigned long long total = 0;
        std::lock_guard lock(g_mutex);
        for (const auto &c : g_counts) total += c->events.load(std::memory_order_relaxed);
        std::fprintf(stderr, "count_only: %llu events\n", total);
    }
} g_shutdown;

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId id, const char *options) {
    g_time = options != nullptr && std::strcmp(options, "time") == 0;
    mpi->RegisterEvent(id, g_enter);
    mpi->RegisterEvent(id, g_leave);
    return mpi->RegisterEvent(id, g_shutdown);
}
