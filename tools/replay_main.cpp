// martini-replay (also `martini replay`): runs profiler clients over a recorded event
// trace, without a runtime.
//
//   martini-replay --client NAME_OR_PATH[=OPTIONS] [--client ...] TRACE.jsonl
//
// Exit status: 0 when the whole trace was played; 1 for bad usage or when no client
// could be loaded; 2 when the trace has a bad record (clients still get VmShutdown and
// write what they collected).
#include "martini/core/client_spec.h"
#include "martini/core/core.h"
#include "martini/replay/replay_provider.h"
#include "tools.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

const char kUsage[] =
    "usage: martini-replay --client NAME_OR_PATH[=OPTIONS] [--client ...] TRACE.jsonl\n"
    "   or: martini replay --client NAME_OR_PATH[=OPTIONS] [--client ...] TRACE.jsonl\n"
    "\n"
    "Plays a recorded event trace (docs/replay-format.md) through the Martini core and\n"
    "the given profiler clients, as a runtime would.\n"
    "\n"
    "  --client SPEC   a bundled client's name (callcount) or a client library's path,\n"
    "                  optionally followed by =OPTIONS passed to MPICL_Instantiate;\n"
    "                  several --client options, or one SPEC with ';' between clients\n"
    "  --stats         print playback statistics and core diagnostics on stderr\n"
    "  -h, --help      this text\n"
    "\n"
    "Bundled clients are looked up in $MARTINI_CLIENT_PATH (':'-separated), then next\n"
    "to this program.\n";

}  // namespace

namespace martini::tools {

std::string ExecutableDir() {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return ".";
    buf[n] = '\0';
    std::string path(buf);
    return path.substr(0, path.rfind('/'));
}

int ReplayMain(int argc, char **argv) {
    std::string clientList;  // every --client, joined in the text form
    std::string tracePath;
    bool stats = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (arg == "--stats") {
            stats = true;
        } else if (arg == "--client" || arg.rfind("--client=", 0) == 0) {
            std::string value;
            if (arg == "--client") {
                if (i + 1 >= argc) {
                    std::fprintf(stderr, "martini-replay: --client needs a value\n%s", kUsage);
                    return 1;
                }
                value = argv[++i];
            } else {
                value = arg.substr(std::strlen("--client="));
            }
            martini::core::ClientConfig check;
            if (const std::string err = martini::core::ReadClientConfig(value, check); !err.empty()) {
                std::fprintf(stderr, "martini-replay: %s\n", err.c_str());
                return 1;
            }
            if (!clientList.empty() && ((!value.empty() && value[0] == '@') || clientList[0] == '@')) {
                std::fprintf(stderr, "martini-replay: a --client @FILE.json names every client; it cannot be "
                                     "combined with other --client options\n");
                return 1;
            }
            clientList += (clientList.empty() ? "" : ";") + value;
        } else if (!arg.empty() && arg[0] == '-') {
            std::fprintf(stderr, "martini-replay: unknown option '%s'\n%s", arg.c_str(), kUsage);
            return 1;
        } else if (tracePath.empty()) {
            tracePath = arg;
        } else {
            std::fprintf(stderr, "martini-replay: only one trace file may be given ('%s' and '%s')\n",
                         tracePath.c_str(), arg.c_str());
            return 1;
        }
    }
    if (tracePath.empty() || clientList.empty()) {
        std::fprintf(stderr, "martini-replay: %s\n%s",
                     tracePath.empty() ? "no trace file given" : "no --client given", kUsage);
        return 1;
    }
    std::ifstream trace(tracePath);
    if (!trace) {
        std::fprintf(stderr, "martini-replay: cannot open trace '%s': %s\n", tracePath.c_str(),
                     std::strerror(errno));
        return 1;
    }

    martini::replay::ReplayProvider provider;
    martini::core::Core core(provider);
    const martini::core::ClientsLoaded clients =
        martini::core::LoadClients(core, clientList, martini::tools::ExecutableDir());
    if (!clients.error.empty()) {
        std::fprintf(stderr, "martini-replay: %s\n", clients.error.c_str());
        return 1;
    }
    if (clients.loaded == 0) {
        std::fprintf(stderr, "martini-replay: no client could be loaded; nothing to do\n");
        return 1;
    }
    core.FinishInit();
    const std::string error = provider.Play(core, trace, tracePath);
    const auto &s = provider.GetStats();
    const auto d = core.GetDiagnostics();
    if (stats) {
        std::fprintf(stderr,
                     "martini-replay: %llu records, %llu events raised, %llu methods "
                     "(%llu not instrumented: no client wants them; %llu calls skipped)\n"
                     "martini-replay: core: %llu filter calls, %llu re-entrant events "
                     "suppressed, %llu handler failures, %llu filter failures\n",
                     (unsigned long long)s.records, (unsigned long long)s.eventsRaised,
                     (unsigned long long)s.methods, (unsigned long long)s.methodsNotInstrumented,
                     (unsigned long long)s.callsNotInstrumented, (unsigned long long)d.filterCalls,
                     (unsigned long long)d.reentrantEventsSuppressed,
                     (unsigned long long)d.handlerFailures, (unsigned long long)d.filterFailures);
    } else if (d.handlerFailures != 0) {
        std::fprintf(stderr, "martini-replay: %llu handler failures were contained (see above)\n",
                     (unsigned long long)d.handlerFailures);
    }
    if (!error.empty()) {
        std::fprintf(stderr, "martini-replay: bad trace record, playback stopped: %s\n", error.c_str());
        return 2;
    }
    return 0;
}

}  // namespace martini::tools
