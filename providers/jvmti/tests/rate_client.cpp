// A client that raises its sampling rate while sampling runs, as an adaptive profiler
// would, from inside its SampleHit handler (the provider's sampler thread): it asks
// for FROM Hz; from its 10th sample on, for one Hz more at every sample, starting at
// TO, so that every sample of the second phase reaches the provider with a new rate,
// those the sampler thread raises while sampling stops at VMDeath too. At VmShutdown
// it writes, for each phase, the samples it got from threads with a Java stack and the
// span of their timestamps (tests/sampling_test.sh turns them into rates).
//
// options: OUTFILE,FROM,TO[,wall]
#include <MpiAPI.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace Martini::MPI;

namespace {

IMpi *gMpi = nullptr;
TId gId = 0;
std::string gOut;
unsigned gTo = 0;
ESamplingClock gClock = SC_CPU;

// Touched on the sampler thread only (SampleHit), read at VmShutdown after it ended.
struct Phase {
    std::uint64_t samples = 0, first = 0, last = 0;
};
Phase gPhases[2];
int gPhase = 0;
TResult gRaise = MRTE_RESULT_OK;

class Sample : public ISampleHitEventObserver {
    BitSet EventDataTypes() override { return DR_THREAD_ID | DR_CPU_TIMESTAMP | DR_VM_CALL_STACK; }
    void HandleEvent(SSampleHitEventData &d) override {
        if (!(d.validData & DR_VM_CALL_STACK) || d.stackTrace.uiActualSize == 0) return;
        Phase &p = gPhases[gPhase];
        if (p.samples++ == 0) p.first = d.uiCpuTimestamp;
        p.last = d.uiCpuTimestamp;
        if (gPhase == 0 && p.samples == 10) gPhase = 1;
        if (gPhase == 1) {
            const TResult r = gMpi->SetSamplingRate(gId, gTo + static_cast<unsigned>(gPhases[1].samples), gClock);
            if (r != MRTE_RESULT_OK) gRaise = r;
        }
    }
} gSample;

class Shutdown : public IVmShutdownEventObserver {
    void HandleEvent() override {
        std::FILE *f = std::fopen(gOut.c_str(), "w");
        if (f == nullptr) return;
        std::fprintf(f, "raise %d\n", static_cast<int>(gRaise));
        for (const Phase &p : gPhases) {
            std::fprintf(f, "phase %llu %llu\n", static_cast<unsigned long long>(p.samples),
                         static_cast<unsigned long long>(p.last - p.first));
        }
        std::fclose(f);
    }
} gShutdown;

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *options) {
    gMpi = mpi;
    gId = clientId;
    // OUTFILE,FROM,TO[,wall]
    const std::string o = options != nullptr ? options : "";
    const std::size_t a = o.find(','), b = a == std::string::npos ? a : o.find(',', a + 1);
    if (b == std::string::npos) return MRTE_ERROR_ILLEGAL_ARGUMENT;
    gOut = o.substr(0, a);
    const unsigned from = static_cast<unsigned>(std::strtoul(o.c_str() + a + 1, nullptr, 10));
    gTo = static_cast<unsigned>(std::strtoul(o.c_str() + b + 1, nullptr, 10));
    if (o.find(",wall", b) != std::string::npos) gClock = SC_WALL;
    if (mpi->SetSamplingRate(clientId, from, gClock) != MRTE_RESULT_OK) return MRTE_ERROR_FAIL;
    if (mpi->RegisterEvent(clientId, gSample) != MRTE_RESULT_OK) return MRTE_ERROR_FAIL;
    if (mpi->RegisterEvent(clientId, gShutdown) != MRTE_RESULT_OK) return MRTE_ERROR_FAIL;
    return MRTE_RESULT_OK;
}
