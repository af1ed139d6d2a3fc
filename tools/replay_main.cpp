// martini-replay (also `martini replay`): runs profiler clients over a recorded event
// trace, without a runtime.
//
//   martini-replay --client NAME_OR_PATH[=OPTIONS] [--client ...] [--output DIR] TRACE.jsonl
//
// Exit status: 0 when the whole trace was played; 1 for bad usage, when no client
// could be loaded or when a client could not write an output file (the run status
// handshake, run_status.h); 2 when the trace has a bad record (clients still get
// VmShutdown and write what they collected).
#include "martini/core/client_spec.h"
#include "martini/core/core.h"
#include "martini/core/run.h"
#include "martini/replay/replay_provider.h"
#include "cli.h"
#include "run_status.h"
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

const char kUsage[] = "usage: {0} --client NAME_OR_PATH[=OPTIONS] [--client ...] [--output DIR] TRACE.jsonl";

const char kDescription[] =
    "Plays a recorded event trace (docs/replay-format.md) through the Martini core and\n"
    "the given profiler clients, as a runtime would.";

const char kFooter[] =
    "Bundled clients are looked up in $MARTINI_CLIENT_PATH (':'-separated), then in\n"
    "<libdir>/martini/clients and the build tree (docs/configuration.md). Exit status: 0\n"
    "when the whole trace was played; 1 for bad usage, when no client could be loaded\n"
    "or when an output file could not be written; 2 when the trace has a bad record.";

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

std::string ProgramName(const char *argv0) {
    const std::string path = argv0 != nullptr && *argv0 != '\0' ? argv0 : "martini-replay";
    return path.substr(path.rfind('/') + 1);
}

int ReplayMain(const std::string &program, int argc, char **argv) {
    std::vector<std::string> clientOptions;  // every --client
    std::string tracePath, outputDir;
    bool stats = false;
    CLI::App app(kDescription, program);
    std::string usage = kUsage;
    usage.replace(usage.find("{0}"), 3, program);
    Configure(app, usage, kFooter);
    app.add_option("--client", clientOptions,
                   "a bundled client's name (callcount, cgprof, ...) or a client library's path,\n"
                   "optionally followed by =OPTIONS passed to MPICL_Instantiate; several\n"
                   "--client options, or one SPEC with ';' between clients")
        ->type_name("SPEC")
        ->allow_extra_args(false);
    app.add_option("--output", outputDir,
                   "where clients write their files (EcSetOutputDirectory, as `martini run\n"
                   "--output` gives it to a runtime's clients)")
        ->type_name("DIR");
    app.add_flag("--stats", stats, "print playback statistics and core diagnostics on stderr");
    app.add_option("trace", tracePath, "the trace (JSON lines)")->type_name("TRACE.jsonl");
    if (const int code = Parse(app, argc, argv); code >= 0) return code;
    const char *name = program.c_str();

    std::string clientList;  // every --client, joined in the text form
    for (const std::string &value : clientOptions) {
        martini::core::ClientConfig check;
        if (const std::string err = martini::core::ReadClientConfig(value, check); !err.empty()) {
            std::fprintf(stderr, "%s: %s\n", name, err.c_str());
            return 1;
        }
        if (!clientList.empty() && ((!value.empty() && value[0] == '@') || clientList[0] == '@')) {
            std::fprintf(stderr, "%s: a --client @FILE.json names every client; it cannot be "
                                 "combined with other --client options\n", name);
            return 1;
        }
        clientList += (clientList.empty() ? "" : ";") + value;
    }
    if (tracePath.empty() || clientList.empty()) {
        std::fprintf(stderr, "%s: %s\nRun '%s --help' for more information.\n", name,
                     tracePath.empty() ? "no trace file given" : "no --client given", name);
        return 1;
    }
    std::ifstream trace(tracePath);
    if (!trace) {
        std::fprintf(stderr, "%s: cannot open trace '%s': %s\n", name, tracePath.c_str(),
                     std::strerror(errno));
        return 1;
    }

    // The clients say here which output files they wrote or could not write.
    const OwnStatusFile status;
    martini::replay::ReplayProvider provider;
    martini::core::Core core(provider);
    martini::core::Run run(core);
    const martini::core::Run::Loaded loaded = run.Load(clientList, martini::tools::ExecutableDir());
    if (loaded.refusal != martini::core::Run::Refusal::kNone) {
        std::fprintf(stderr, "%s: %s%s\n", name, loaded.message.c_str(),
                     loaded.refusal == martini::core::Run::Refusal::kBadConfig ? "" : "; nothing to do");
        return 1;
    }
    core.FinishInit();
    // --output, else the configuration file's "output": the clients' output directory,
    // announced at the trace's VmInit as a runtime's provider announces it.
    if (!outputDir.empty()) run.SetOutputDirectory(outputDir);
    const std::string error = provider.Play(run, core, trace, tracePath);
    const auto &s = provider.GetStats();
    const auto d = core.GetDiagnostics();
    if (stats) {
        std::fprintf(stderr,
                     "%s: %llu records, %llu events raised, %llu methods "
                     "(%llu not instrumented: no client wants them; %llu calls skipped)\n"
                     "%s: core: %llu filter calls, %llu re-entrant events "
                     "suppressed, %llu handler failures, %llu filter failures\n",
                     name, (unsigned long long)s.records, (unsigned long long)s.eventsRaised,
                     (unsigned long long)s.methods, (unsigned long long)s.methodsNotInstrumented,
                     (unsigned long long)s.callsNotInstrumented, name, (unsigned long long)d.filterCalls,
                     (unsigned long long)d.reentrantEventsSuppressed,
                     (unsigned long long)d.handlerFailures, (unsigned long long)d.filterFailures);
    } else if (d.handlerFailures != 0) {
        std::fprintf(stderr, "%s: %llu handler failures were contained (see above)\n",
                     name, (unsigned long long)d.handlerFailures);
    }
    if (!error.empty()) {
        std::fprintf(stderr, "%s: bad trace record, playback stopped: %s\n", name, error.c_str());
        return 2;
    }
    if (const RunStatus st = status.Read(); !st.failed.empty()) {
        std::fprintf(stderr, "%s: %zu output file%s could not be written:", name, st.failed.size(),
                     st.failed.size() == 1 ? "" : "s");
        for (const auto &[path, cause] : st.failed) std::fprintf(stderr, " %s (%s)", path.c_str(), cause.c_str());
        std::fprintf(stderr, "\n");
        return 1;
    }
    return 0;
}

}  // namespace martini::tools
