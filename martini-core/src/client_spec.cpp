#include "martini/core/client_spec.h"

#include "martini/core/core.h"
#include "martini/core/log.h"
#include "martini/core/status.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

// The installed bindir relative to the installed libdir ("../lib/x86_64-linux-gnu"),
// from Meson; a build without it assumes the plain layout.
#ifndef MARTINI_BINDIR_TO_LIBDIR
#define MARTINI_BINDIR_TO_LIBDIR "../lib"
#endif

namespace martini::core {

std::string ParseClientList(std::string_view text, std::vector<ClientSpec> &out) {
    std::string entry;
    std::size_t entryStart = 0;
    auto finish = [&](std::size_t endPos) -> std::string {
        // Split at the first unescaped '=' (escapes are already resolved in `entry`,
        // so positions of '=' in escaped text cannot occur: '=' is never escaped).
        if (entry.empty()) return {};
        ClientSpec spec;
        const auto eq = entry.find('=');
        spec.name = entry.substr(0, eq);
        if (eq != std::string::npos) spec.options = entry.substr(eq + 1);
        if (spec.name.empty()) {
            return "client list: entry at position " + std::to_string(entryStart + 1) +
                   " (up to " + std::to_string(endPos) + ") has options but no client name";
        }
        out.push_back(std::move(spec));
        entry.clear();
        return {};
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\\' && i + 1 < text.size() && (text[i + 1] == ';' || text[i + 1] == '\\')) {
            entry.push_back(text[++i]);
        } else if (c == ';') {
            if (auto err = finish(i); !err.empty()) return err;
            entryStart = i + 1;
        } else {
            entry.push_back(c);
        }
    }
    return finish(text.size());
}

static bool IsRegularFile(const std::string &path) {
    struct stat st{};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> SplitSearchPath(std::string_view list) {
    std::vector<std::string> dirs;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t end = list.find(':', start);
        const std::string_view dir = list.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
        if (!dir.empty()) dirs.emplace_back(dir);
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    return dirs;
}

std::string ResolveClientPath(ClientSpec &spec, const std::vector<std::string> &searchDirs) {
    const bool looksLikePath = spec.name.find('/') != std::string::npos ||
                               (spec.name.size() > 3 &&
                                spec.name.compare(spec.name.size() - 3, 3, ".so") == 0);
    if (looksLikePath) {
        // dlopen searches the library path, not the current directory, for a name
        // without '/': "libmine.so" next to the user means "./libmine.so".
        const bool bare = spec.name.find('/') == std::string::npos;
        spec.path = bare && IsRegularFile(spec.name) ? "./" + spec.name : spec.name;
        return {};
    }
    std::string tried;
    for (const auto &dir : searchDirs) {
        // <dir>/lib<name>.so (installed layout), <dir>/<name>/lib<name>.so (build tree)
        for (const std::string &candidate : {dir + "/lib" + spec.name + ".so",
                                             dir + "/" + spec.name + "/lib" + spec.name + ".so"}) {
            if (IsRegularFile(candidate)) {
                spec.path = candidate;
                return {};
            }
            tried += (tried.empty() ? "" : ", ") + candidate;
        }
    }
    return "client '" + spec.name + "' not found: no bundled client of that name (looked for " +
           (tried.empty() ? std::string("nothing: no search directories") : tried) + ")";
}

// ---- The file form ----------------------------------------------------------------

namespace {

std::string ReadJsonClientConfig(const std::string &path, ClientConfig &out) {
    const std::string where = "configuration file '" + path + "'";
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return where + " is a directory, not a file";
    std::ifstream in(path);
    if (!in) return "cannot read the " + where + ": " + std::strerror(errno);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return where + ": not valid JSON";
    if (!j.is_object()) return where + ": expected an object with \"clients\"";
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() != "clients" && it.key() != "output") return where + ": unknown field \"" + it.key() + "\"";
    }
    if (const auto output = j.find("output"); output != j.end()) {
        if (!output->is_string() || output->get<std::string>().empty()) {
            return where + ": \"output\" must be a directory name";
        }
        out.outputDirectory = output->get<std::string>();
    }
    const auto clients = j.find("clients");
    if (clients == j.end() || !clients->is_array()) return where + ": \"clients\" must be an array";
    for (std::size_t i = 0; i < clients->size(); ++i) {
        const nlohmann::json &c = (*clients)[i];
        const std::string entry = where + ": clients[" + std::to_string(i) + "]";
        if (!c.is_object() || !c.contains("client") || !c["client"].is_string()) {
            return entry + " needs a \"client\" string";
        }
        for (auto f = c.begin(); f != c.end(); ++f) {
            if (f.key() != "client" && f.key() != "options") return entry + ": unknown field \"" + f.key() + "\"";
        }
        ClientSpec spec;
        spec.name = c["client"].get<std::string>();
        if (spec.name.empty()) return entry + ": \"client\" is empty";
        if (c.contains("options")) {
            if (!c["options"].is_string()) return entry + ": \"options\" must be a string";
            spec.options = c["options"].get<std::string>();
        }
        out.clients.push_back(std::move(spec));
    }
    return {};
}

}  // namespace

std::string ReadClientConfig(std::string_view text, ClientConfig &out) noexcept {
    try {
        if (!text.empty() && text[0] == '@') return ReadJsonClientConfig(std::string(text.substr(1)), out);
        return ParseClientList(text, out.clients);
    } catch (const std::exception &e) {
        return std::string("cannot read the client configuration: ") + e.what();
    } catch (...) {
        return "cannot read the client configuration";
    }
}

std::string ClientConfigJson(const ClientConfig &config) {
    nlohmann::json j;
    j["clients"] = nlohmann::json::array();
    for (const ClientSpec &s : config.clients) {
        j["clients"].push_back({{"client", s.path.empty() ? s.name : s.path}, {"options", s.options}});
    }
    if (!config.outputDirectory.empty()) j["output"] = config.outputDirectory;
    return j.dump();
}

// ---- Finding clients --------------------------------------------------------------

std::string DirectoryOf(const void *address) {
    Dl_info info{};
    if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return ".";
    std::string path = info.dli_fname;
    if (path.find('/') == std::string::npos) {
        // The main executable may be named without a directory: ask the kernel.
        std::error_code ec;
        path = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    }
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::vector<std::string> ClientSearchDirs(const std::string &anchorDir, const char *searchPath) {
    std::vector<std::string> dirs;
    if (searchPath != nullptr) {
        dirs = SplitSearchPath(searchPath);
    } else if (const char *env = std::getenv("MARTINI_CLIENT_PATH")) {
        dirs = SplitSearchPath(env);
    }
    // Installed: clients in <libdir>/martini/clients; the anchor is <libdir>/martini
    // (the JVM agent), <libdir> (libmartini-interp) or <bindir> (the tools).
    dirs.push_back(anchorDir + "/clients");
    dirs.push_back(anchorDir + "/martini/clients");
    dirs.push_back(anchorDir + "/" MARTINI_BINDIR_TO_LIBDIR "/martini/clients");
    // Build tree: build/clients/<name>/lib<name>.so; the anchor is build/tools or
    // build/providers/<provider>.
    dirs.push_back(anchorDir + "/../clients");
    dirs.push_back(anchorDir + "/../../clients");
    return dirs;
}

// ---- Loading ----------------------------------------------------------------------

ClientsLoaded LoadClients(Core &core, std::string_view config, const std::string &anchorDir,
                          const char *searchPath) noexcept {
    ClientsLoaded result;
    try {
        ClientConfig parsed;
        result.error = ReadClientConfig(config, parsed);
        if (!result.error.empty()) {
            AppendStatusLine("error: " + result.error);
            AppendStatusLine("loaded 0 of 0 clients");
            return result;
        }
        result.requested = static_cast<unsigned>(parsed.clients.size());
        result.outputDirectory = parsed.outputDirectory;
        const std::vector<std::string> dirs = ClientSearchDirs(anchorDir, searchPath);
        for (std::size_t i = 0; i < parsed.clients.size(); ++i) {
            ClientSpec &spec = parsed.clients[i];
            if (core.ClientCount() >= kMaxClients) {  // one line for all the clients left over
                const std::string err = std::to_string(parsed.clients.size() - i) + " client" +
                                        (parsed.clients.size() - i == 1 ? "" : "s") + " from '" + spec.name +
                                        "' on not loaded: too many clients (at most " +
                                        std::to_string(kMaxClients) + ")";
                LogLine(err + "; the other clients are unaffected");
                AppendStatusLine("client " + spec.name + " failed: " + err);
                break;
            }
            if (std::string err = ResolveClientPath(spec, dirs); !err.empty()) {
                LogLine(err + "; the other clients are unaffected");
                AppendStatusLine("client " + spec.name + " failed: " + err);
                continue;
            }
            const Core::LoadResult loaded = core.LoadClient(spec);  // names a failure itself
            if (loaded.ok()) {
                ++result.loaded;
            } else {
                AppendStatusLine("client " + spec.name + " failed: " + loaded.error);
            }
        }
    } catch (const std::exception &e) {
        result.error = std::string("loading clients: ") + e.what();
        AppendStatusLine("error: " + result.error);
    } catch (...) {
        result.error = "loading clients failed";
        AppendStatusLine("error: " + result.error);
    }
    AppendStatusLine("loaded " + std::to_string(result.loaded) + " of " + std::to_string(result.requested) +
                     " clients");
    return result;
}

}  // namespace martini::core
