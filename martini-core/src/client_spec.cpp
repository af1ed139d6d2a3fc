#include "martini/core/client_spec.h"

#include <sys/stat.h>

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

}  // namespace martini::core
