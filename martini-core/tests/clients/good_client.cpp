// A well-formed client: counts MethodEnter events; the test reads the count.
#include <MpiAPI.h>

#include <atomic>

using namespace Martini::MPI;

namespace {
std::atomic<unsigned long long> g_enters{0};
class Enter : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID; }
    void HandleEvent(SMethodEnterEventData &) override { g_enters.fetch_add(1); }
} g_enter;
}  // namespace

extern "C" API_EXPORT unsigned long long test_client_enters() { return g_enters.load(); }

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *) {
    return mpi->RegisterEvent(clientId, g_enter);
}
