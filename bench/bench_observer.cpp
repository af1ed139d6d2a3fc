// The observers of dispatch_bench_lib (see dispatch_bench.cpp), in a shared library of
// their own, as a real client's are: the benchmark reaches HandleEvent only through
// the vtable, so no case can inline it. The same counting as dispatch_bench's observer.
#include <MpiAPI.h>

#include <array>
#include <cstdint>

using namespace Martini::MPI;

namespace {

constexpr unsigned kMaxThreads = 2;  // as dispatch_bench
constexpr unsigned kPoolSize = 64;

class LibCountingObserver final : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | DR_THREAD_ID; }
    void HandleEvent(SMethodEnterEventData &data) override { ++perThread_[data.threadId & (kMaxThreads - 1)].events; }
    std::uint64_t Events(unsigned thread) const noexcept { return perThread_[thread].events; }

private:
    struct alignas(128) Counter {
        std::uint64_t events = 0;
    };
    std::array<Counter, kMaxThreads> perThread_{};
};

std::array<LibCountingObserver, kPoolSize> gPool;
unsigned gNext = 0;

}  // namespace

// One observer per call, from a fixed pool (dispatch_bench builds its observers once,
// on one thread); nullptr when the pool is used up.
extern "C" API_EXPORT IMethodEnterEventObserver *BenchLibObserverNext() {
    return gNext < kPoolSize ? &gPool[gNext++] : nullptr;
}

extern "C" API_EXPORT std::uint64_t BenchLibObserverEvents(IMethodEnterEventObserver *observer, unsigned thread) {
    return observer != nullptr && thread < kMaxThreads ? static_cast<LibCountingObserver *>(observer)->Events(thread)
                                                       : 0;
}
