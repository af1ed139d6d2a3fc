// A client that refuses to start (e.g. a bad option string).
#include <MpiAPI.h>

using namespace Martini::MPI;

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *, TId, const char *) {
    return MRTE_ERROR_ILLEGAL_ARGUMENT;
}
