// Client configuration: which client libraries to load, with which options.
//
// Text form (the JVM agent's option string, martini-replay's --client):
//   <client>[=<options>][;<client>[=<options>]]...
// <client> is a bundled client's name ("cgprof") or a path to a client library; the
// text after the first '=' is passed unchanged as szOptions ("\;" stands for a
// literal ';', "\\" for '\').
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace martini::core {

struct ClientSpec {
    std::string name;     // as written before '=': a bundled name or a path
    std::string path;     // the library to dlopen (resolved from name)
    std::string options;  // passed to MPICL_Instantiate, "" when none
};

// Parses the text form. Returns "" on success, else a message naming the problem
// and its position. Empty entries (";;") are ignored; an entry with no client before
// '=' is an error.
std::string ParseClientList(std::string_view text, std::vector<ClientSpec> &out);

// Resolves spec.name to spec.path: a name containing '/' or ending in ".so" is a path
// used as is; otherwise <dir>/lib<name>.so, then <dir>/<name>/lib<name>.so, is looked
// up for each of `searchDirs`, in order.
// Returns "" on success, else a message naming the client and where it looked.
std::string ResolveClientPath(ClientSpec &spec, const std::vector<std::string> &searchDirs);

// The directories of a ':'-separated list ($MARTINI_CLIENT_PATH), empty entries left out.
std::vector<std::string> SplitSearchPath(std::string_view list);

}  // namespace martini::core
