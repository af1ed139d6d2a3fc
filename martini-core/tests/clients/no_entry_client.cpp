// A library that forgot to export MPICL_Instantiate.
#include <MpiAPI.h>

using namespace Martini::MPI;

extern "C" API_EXPORT TResult MPICL_Instantiat(IMpi *, TId, const char *) { return MRTE_RESULT_OK; }
