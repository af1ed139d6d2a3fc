#include "crash_report.h"

#include <filesystem>
#include <fstream>

namespace martini::tools {

namespace fs = std::filesystem;

std::string FindJvmErrorLog(int pid, const std::string &dir) {
    const std::string name = "hs_err_pid" + std::to_string(pid) + ".log";
    for (const fs::path &candidate : {fs::path(dir) / name, fs::path("/tmp") / name}) {
        std::error_code ec;
        if (fs::is_regular_file(candidate, ec)) return candidate.string();
    }
    return {};
}

std::string NameCrashingClient(const std::string &errorLog, const std::vector<std::string> &clientNames,
                               const std::vector<std::string> &clientPaths) {
    std::ifstream in(errorLog);
    std::string line;
    // "# C  [libcgprof.so+0x1a2b]  Foo::Bar()+0x1b" (problematic frame) and the native
    // frames "C  [libcgprof.so+0x1a2b]  ..." of the crashing thread's stack.
    auto clientIn = [&](const std::string &text) -> int {
        const auto open = text.find("C  [");
        if (open == std::string::npos) return -1;
        const auto start = open + 4;
        const auto end = text.find_first_of("+]", start);
        if (end == std::string::npos) return -1;
        const std::string library = text.substr(start, end - start);
        for (std::size_t i = 0; i < clientPaths.size(); ++i) {
            if (fs::path(clientPaths[i]).filename() == library) return static_cast<int>(i);
        }
        return -1;
    };
    bool problematicNext = false;
    int client = -1;
    std::string frame;
    while (std::getline(in, line) && client < 0) {
        if (line.rfind("# Problematic frame:", 0) == 0) {
            problematicNext = true;
            continue;
        }
        if (problematicNext || line.rfind("C  [", 0) == 0) {
            client = clientIn(line);
            if (client >= 0) frame = line.substr(line.find('[') + 1, line.find(']') - line.find('[') - 1);
        }
        problematicNext = false;
    }
    if (client < 0) return {};
    return "the JVM crashed in the code of client '" + clientNames[client] + "' (" + frame + "; see " + errorLog +
           "): a client runs inside the program, and its crash ends it (docs/client-guide.md)";
}

}  // namespace martini::tools
