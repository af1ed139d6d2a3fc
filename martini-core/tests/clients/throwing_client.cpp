// A client whose MPICL_Instantiate throws, and whose MethodEnter handler would throw.
#include <MpiAPI.h>

#include <stdexcept>
#include <string>

using namespace Martini::MPI;

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *, TId, const char *szOptions) {
    throw std::runtime_error(std::string("cannot parse options '") + szOptions + "'");
}
