// Martini Profiling Interface (MPI) 2.x: the whole client API.
//
//   #include <MpiAPI.h>
//   using namespace Martini::MPI;
//
// A client is a shared library exporting
//   extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *pMpiApi, TId clientId,
//                                                   const char *szOptions);
// Martini calls it once, on the runtime's initialization thread, before any event.
// The client registers its observers and filters there (the only phase in which that
// is allowed) and returns MRTE_RESULT_OK; any other result unloads the client, with a
// message naming it and the result, and the other clients go on. szOptions is the
// text given after "=" in the client's configuration ("" when none), never NULL.
//
// See docs/client-guide.md for a walk-through.
#pragma once

#include "martini/mpi/base.h"
#include "martini/mpi/data_requests.h"
#include "martini/mpi/events.h"
#include "martini/mpi/filters.h"
#include "martini/mpi/mpi.h"

// Every client compiled with this header records the MPI version it was built
// against, so that Martini can refuse a client built for another major version, or a
// newer minor one, instead of crashing on a changed vtable. (Weak: one definition per library, however
// many of its files include this header.)
#ifndef MARTINI_NO_CLIENT_VERSION_STAMP
extern "C" {
API_EXPORT extern const unsigned int MPICL_MpiVersion;
__attribute__((weak)) extern const unsigned int MPICL_MpiVersion = MARTINI_MPI_VERSION;
}
#endif

// Type of the client entry point, for loaders.
typedef Martini::MPI::TResult (*MPICL_Instantiate_t)(Martini::MPI::IMpi *pMpiApi,
                                                    Martini::MPI::TId clientId,
                                                    const char *szOptions);
