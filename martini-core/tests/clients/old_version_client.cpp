// A client built against an MPI with another major version (1.4).
#define MARTINI_NO_CLIENT_VERSION_STAMP
#include <MpiAPI.h>

using namespace Martini::MPI;

extern "C" API_EXPORT const unsigned int MPICL_MpiVersion = (1u << 16) | 4u;
extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *, TId, const char *) { return MRTE_RESULT_OK; }
