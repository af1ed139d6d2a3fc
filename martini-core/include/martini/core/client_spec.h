// Client configuration: which client libraries to load, with which options, and how
// every provider and tool finds and loads them (one path for all; docs/configuration.md).
//
// Text form (the JVM agent's option string, martini-replay's --client, the interpreter
// ABI's martini_config.clients):
//   <client>[=<options>][;<client>[=<options>]]...
// <client> is a bundled client's name ("cgprof") or a path to a client library; the
// text after the first '=' is passed unchanged as szOptions ("\;" stands for a
// literal ';', "\\" for '\').
//
// File form, "@<file.json>" in place of the text:
//   {"clients": [{"client": "cgprof", "options": "counts"}], "output": "DIR"}
// "options" and "output" may be left out; no other field is accepted.
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

struct ClientConfig {
    std::vector<ClientSpec> clients;
    std::string outputDirectory;  // the file form's "output"; "" when not given
};

// Reads the text form, or the file form when `text` starts with '@'. Returns "" on
// success, else one message naming the file or entry and the problem. Never throws.
std::string ReadClientConfig(std::string_view text, ClientConfig &out) noexcept;

// The file form of `config` (what ReadClientConfig reads back after '@').
std::string ClientConfigJson(const ClientConfig &config);

// The directory of the executable or shared library that contains `address` ("."
// when it cannot be told).
std::string DirectoryOf(const void *address);

// Where bundled clients are looked up by name, for code loaded from `anchorDir`:
// the ':'-separated `searchPath` when not null, else $MARTINI_CLIENT_PATH; then the
// installed layout (<libdir>/martini/clients, whatever the libdir, whether the anchor
// is <bindir>, <libdir> or <libdir>/martini) and the build tree (build/clients).
std::vector<std::string> ClientSearchDirs(const std::string &anchorDir, const char *searchPath = nullptr);

class Core;

struct ClientsLoaded {
    unsigned requested = 0;       // clients the configuration names
    unsigned loaded = 0;          // of them, loaded and instantiated
    std::string outputDirectory;  // the configuration's, "" when it gives none
    std::string error;            // the configuration could not be read: nothing loaded
};

// The one way clients are loaded: reads `config` (text or "@file.json"), resolves each
// client from `anchorDir` (ClientSearchDirs) and loads it into `core`. A client that
// cannot be found or loaded is reported on stderr by name, with its cause, and the
// others still load. When $MARTINI_STATUS_FILE is set (`martini run` sets it), appends
// "loaded N of M clients" and, per failed client, "client NAME failed: CAUSE" there
// (martini/core/status.h). Call during INIT, before Core::FinishInit. Never throws.
ClientsLoaded LoadClients(Core &core, std::string_view config, const std::string &anchorDir,
                          const char *searchPath = nullptr) noexcept;

}  // namespace martini::core
