// Benchmark client: consumes SampleHit with what a sampling call-graph profiler asks
// for (DR_THREAD_ID | DR_VM_CALL_STACK | DR_CPU_TIMESTAMP), counts samples and frames,
// and prints the totals at shutdown. bench/mono_overhead.sh measures the cost of
// sampling through Martini with it (Mono's sampler, the provider's lock-free queue and
// delivery thread), apart from any client's tree building.
#include <MpiAPI.h>

#include <atomic>
#include <cstdio>

using namespace Martini::MPI;

namespace {

std::atomic<unsigned long long> g_samples{0}, g_frames{0};

class Samples : public ISampleHitEventObserver {
public:
    BitSet EventDataTypes() override { return DR_THREAD_ID | DR_VM_CALL_STACK | DR_CPU_TIMESTAMP; }
    void HandleEvent(SSampleHitEventData &d) override {
        g_samples.fetch_add(1, std::memory_order_relaxed);
        g_frames.fetch_add(d.stackTrace.uiActualSize, std::memory_order_relaxed);
    }
} g_observer;

class Shutdown : public IVmShutdownEventObserver {
public:
    void HandleEvent() override {
        std::fprintf(stderr, "sample_only: %llu samples, %llu frames\n", g_samples.load(), g_frames.load());
    }
} g_shutdown;

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *) {
    if (TResult r = mpi->RegisterEvent(clientId, g_observer); r != MRTE_RESULT_OK) return r;
    return mpi->RegisterEvent(clientId, g_shutdown);
}
