// A client built against a newer minor version of this MPI: it may call IMpi methods
// this Martini does not have.
#define MARTINI_NO_CLIENT_VERSION_STAMP
#include <MpiAPI.h>

using namespace Martini::MPI;

extern "C" API_EXPORT const unsigned int MPICL_MpiVersion = MARTINI_MPI_VERSION + 1;
extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *, TId, const char *) { return MRTE_RESULT_OK; }
