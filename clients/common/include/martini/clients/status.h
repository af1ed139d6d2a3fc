// The run status handshake, client side: when $MARTINI_STATUS_FILE names a file (set
// by `martini run`), each line appended there tells the launcher what happened in the
// profiled process. Clients append one line per output file:
//   wrote PATH
//   failed PATH: CAUSE
// (the core appends "loaded N of M clients" and "client NAME failed: CAUSE").
// The writer is the core's own, martini/core/status.h, named here in martini::clients:
// header-only with no dependencies, so a client includes it without linking
// martini-core (martini-clients' pkg-config flags find it). One write(2) per line on
// an O_APPEND descriptor, so lines of several threads or processes never interleave;
// newlines inside a line become spaces.
#pragma once

#include "martini/core/status.h"

namespace martini::clients {

using martini::core::AppendStatusLine;
using martini::core::kStatusFileVariable;

}  // namespace martini::clients
