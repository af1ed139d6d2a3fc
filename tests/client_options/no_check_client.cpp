// A client without MPICL_CheckOptions (as third-party clients may be): CheckClientOptions
// leaves it to the runtime, whatever its options.
#include <MpiAPI.h>

using namespace Martini::MPI;

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *, TId, const char *options) {
    return options != nullptr && options[0] != '\0' ? MRTE_ERROR_ILLEGAL_ARGUMENT : MRTE_RESULT_OK;
}
