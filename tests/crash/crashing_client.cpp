// A client that crashes on purpose: at the Nth MethodEnter (option "after=N", default
// 1000) it dereferences null, or with "abort" calls abort(), or with "throw" throws a
// C++ exception from every MethodEnter from then on (which the core contains). For
// the test that `martini run` names the client whose code was on the crashing thread,
// and for bench/reliability.py.
#include <MpiAPI.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

using namespace Martini::MPI;

namespace {

std::atomic<long> g_enters{0};
long g_after = 1000;
bool g_abort = false;
bool g_throw = false;
int *volatile g_null = nullptr;

class Enter : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID; }
    void HandleEvent(SMethodEnterEventData &) override {
        const long n = g_enters.fetch_add(1) + 1;
        if (g_throw && n >= g_after) throw std::runtime_error("crashing_client: thrown on purpose");
        if (n != g_after) return;
        if (g_abort) std::abort();
        *g_null = 42;  // SIGSEGV in this library's code
    }
};
Enter g_enter;

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *options) {
    const std::string o = options != nullptr ? options : "";
    if (o.find("abort") != std::string::npos) g_abort = true;
    if (o.find("throw") != std::string::npos) g_throw = true;
    if (const auto at = o.find("after="); at != std::string::npos) g_after = std::atol(o.c_str() + at + 6);
    return mpi->RegisterEvent(clientId, g_enter);
}
