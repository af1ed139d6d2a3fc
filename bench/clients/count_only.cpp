// Benchmark client: counts MethodEnter/MethodLeave events in a per-thread counter and
// prints the total at shutdown. The least a call-graph client can do, so that
// bench/jvm_overhead.sh measures the framework's cost per call, not a client's.
// Option "time": also asks for DR_CPU_TIMESTAMP on every enter and leave (summed, so
// the provider must really produce them).
#include <MpiAPI.h>

#include <atomic>
#include <cstdio>

using namespace Martini::MPI;

#include <cstring>

namespace {
bool g_time = false;
std::atomic<unsigned long long> g_total{0};
thread_local unsigned long long t_timeSum = 0;
thread_local unsigned long long t_events = 0;
thread_local struct Flush {
    ~Flush() { g_total.fetch_add(t_events, std::memory_order_relaxed); }
} t_flush;

class Enter : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | (g_time ? DR_CPU_TIMESTAMP : 0); }
    void HandleEvent(SMethodEnterEventData &d) override {
        (void)&t_flush;
        ++t_events;
        t_timeSum -= d.uiCpuTimestamp;
    }
} g_enter;
class Leave : public IMethodLeaveEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | (g_time ? DR_CPU_TIMESTAMP : 0); }
    void HandleEvent(SMethodLeaveEventData &d) override {
        ++t_events;
        t_timeSum += d.uiCpuTimestamp;
    }
} g_leave;
class Shutdown : public IVmShutdownEventObserver {
public:
    void HandleEvent() override {
        std::fprintf(stderr, "count_only: %llu events (threads still running not included)%s\n",
                     g_total.load() + t_events, t_timeSum == 1 ? "" : "");
    }
} g_shutdown;
}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId id, const char *options) {
    g_time = options != nullptr && std::strcmp(options, "time") == 0;
    mpi->RegisterEvent(id, g_enter);
    mpi->RegisterEvent(id, g_leave);
    return mpi->RegisterEvent(id, g_shutdown);
}
