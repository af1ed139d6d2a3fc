// A client that does not say which MPI version it was built against.
#define MARTINI_NO_CLIENT_VERSION_STAMP
#include <MpiAPI.h>

using namespace Martini::MPI;

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *, TId, const char *) { return MRTE_RESULT_OK; }
