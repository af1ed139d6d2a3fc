// martini run: runs a program under Martini with profiler clients.
//
//   martini run [--client NAME[=OPTIONS]]... [--output DIR] [--interval TIME] -- java ARGS...
//   martini run [--client NAME[=OPTIONS]]... [--output DIR] [--keep-aot] -- mono PROGRAM.exe ARGS...
//   martini run [--client NAME[=OPTIONS]]... [--output DIR] -- lua SCRIPT ARGS...
//   martini run [--client NAME[=OPTIONS]]... [--output DIR] -- COMMAND ARGS...   (ant, mvn, run.sh)
//
// The program's name picks its runtime's recipe (runtimes.h: how the agent, module or
// host is found and the command built); launch.h starts it and sees it to its end.
//
// Exit status: the program's own (128+N when killed by signal N), else 1 when the
// profile asked for was not produced (no client loaded, an output not written: the run
// status handshake, run_status.h); 1 when the program could not be started.
#include "cli.h"
#include "common.h"
#include "intervals.h"
#include "launch.h"
#include "runtimes.h"
#include "tools.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace martini::tools {
namespace {

const char kRunUsage[] =
    "usage: martini run [--client NAME[=OPTIONS]]... [--output DIR] -- java ARGS...\n"
    "       martini run [--client NAME[=OPTIONS]]... [--output DIR] [--keep-aot] -- mono PROGRAM.exe ARGS...\n"
    "       martini run [--client NAME[=OPTIONS]]... [--output DIR] -- lua SCRIPT ARGS...\n"
    "       martini run [--client NAME[=OPTIONS]]... [--output DIR] -- COMMAND ARGS...";

const char kRunDescription[] =
    "Runs the program with the given profiler clients and says where their outputs\n"
    "went: java under the JVMTI agent, mono under the Mono profiler module (with --debug\n"
    "for line numbers, and -O=-aot when a client may want calls: AOT-compiled code raises\n"
    "no call events; --keep-aot keeps Mono's AOT images), a Lua 5.4 script under\n"
    "martini-lua (the Lua host of the interpreter C ABI). Any other command (ant, gradle,\n"
    "mvn, a project's run.sh) runs as it is, and the JVMs and Mono runtimes it starts are\n"
    "profiled through JAVA_TOOL_OPTIONS and MONO_ENV_OPTIONS, each writing to DIR/PID.\n"
    "Everything after the program's name is the program's.";

const char kRunFooter[] =
    "The agent is looked up in $MARTINI_JVMTI_AGENT, the Mono module in\n"
    "$MARTINI_MONO_MODULE, then each in the installation (<libdir>/martini) and the\n"
    "build tree; clients in $MARTINI_CLIENT_PATH, then in\n"
    "<libdir>/martini/clients and the build tree (docs/configuration.md). The output\n"
    "directory is created and checked to be writable before the program starts. The\n"
    "exit status is the program's; when it is 0 but the profile asked for was not\n"
    "produced (no client loaded, an output file not written), martini says so last and\n"
    "exits with 1. A signal that ends martini is passed on to the program, which is\n"
    "waited for so the clients write their files.";

// The bundled clients: lib<name>.so in the client search directories (installed), or
// <name>/lib<name>.so (build tree).
std::vector<std::string> BundledClients() {
    std::set<std::string> names;
    auto nameOf = [](const std::string &file) -> std::string {
        if (file.size() > 6 && file.rfind("lib", 0) == 0 && file.compare(file.size() - 3, 3, ".so") == 0) {
            return file.substr(3, file.size() - 6);
        }
        return "";
    };
    for (const auto &dir : core::ClientSearchDirs(ExecutableDir())) {
        std::error_code ec;
        for (const auto &entry : fs::directory_iterator(dir, ec)) {
            const std::string file = entry.path().filename().string();
            std::error_code ec2;
            if (entry.is_regular_file(ec2)) {
                if (const std::string n = nameOf(file); !n.empty()) names.insert(n);
            } else if (entry.is_directory(ec2) && fs::is_regular_file(entry.path() / ("lib" + file + ".so"), ec2)) {
                names.insert(file);
            }
        }
    }
    return {names.begin(), names.end()};
}

// The command line: the clients parsed into request.specs, the runtime flags given, the
// program and its arguments; -1 to go on, else the exit status.
int ParseRun(int argc, char **argv, std::string &output, std::string &interval, RunRequest &request) {
    std::vector<std::string> clientOptions;
    std::map<std::string, bool> flags;  // every recipe's flag, given or not
    CLI::App app(kRunDescription, "martini run");
    const std::vector<std::string> bundled = BundledClients();
    Configure(app, kRunUsage, kRunFooter);
    app.add_option("--client", clientOptions,
                   "a bundled client's name or a client library's path, optionally with\n"
                   "=OPTIONS (`--client cgprof=help` lists cgprof's); repeatable;\n"
                   "default: cgprof. Bundled: " +
                       (bundled.empty() ? std::string("none found") : Join(bundled, ", ")))
        ->type_name("SPEC")
        ->allow_extra_args(false);
    app.add_option("--output", output,
                   "where clients write their files (default: ./martini-out); %p: the\n"
                   "program's process id, %t: its start time (YYYYmmdd-HHMMSS)")
        ->type_name("DIR");
    app.add_option("--interval", interval,
                   "continuous profiling: an interval point every TIME (60s, 500ms, 2m), each\n"
                   "client that keeps intervals writing <name>-N.* with only that interval\n"
                   "(java and lua programs: Mono's module reads no control commands)")
        ->type_name("TIME");
    for (const RuntimeRecipe &recipe : Runtimes()) {
        for (const RuntimeFlag &flag : recipe.flags) {
            if (!flags.count(flag.name)) app.add_flag(flag.name, flags[flag.name], flag.help);
        }
    }
    // The program and its arguments, untouched (options included): all that follows "--"
    // or the first argument that is not martini's option.
    app.prefix_command();
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    if (output.empty()) return Fail("run: --output needs a directory");
    if (std::string e = ParseClients(clientOptions, request.specs); !e.empty()) return Fail("run: " + e);
    for (const auto &[name, given] : flags) {
        if (given) request.flags.insert(name);
    }
    std::vector<std::string> &program = request.program = app.remaining();
    // Before the program (no program's name starts with '-'): an option of martini's
    // that it does not know.
    if (!program.empty() && program[0] != "--" && program[0].size() > 1 && program[0][0] == '-') {
        std::fprintf(stderr, "martini run: unknown option '%s'\nRun 'martini run --help' for more information.\n",
                     program[0].c_str());
        return 1;
    }
    if (!program.empty() && program[0] == "--") program.erase(program.begin());
    if (program.empty()) {
        std::fprintf(stderr, "martini run: no program given\n%s\nRun 'martini run --help' for more information.\n", kRunUsage);
        return 1;
    }
    return -1;
}

}  // namespace

int Run(int argc, char **argv) {
    std::string output = "martini-out", interval;
    RunRequest request;
    if (const int code = ParseRun(argc, argv, output, interval, request); code >= 0) return code;
    long long intervalMs = 0;
    if (!interval.empty() && (intervalMs = ParseDurationMs(interval)) < 0) {
        return Fail("run: --interval '" + interval + "' is not a time (60s, 500ms, 2m)");
    }
    const std::string &name = request.program[0];
    const RuntimeRecipe *recipe = RecipeFor(fs::path(name).filename().string());
    // A host that replaces the program (martini-lua for lua) runs in its place: the
    // program need not be installed.
    request.programPath = recipe != nullptr && recipe->replacesProgram ? name : FindProgram(name);
    if (request.programPath.empty()) return Fail("run: program not found: '" + name + "' (not an executable file, nor in $PATH)");
    if (intervalMs > 0 && (recipe == nullptr || !recipe->controlChannel)) {
        return Fail("run: --interval needs a program whose process reads control commands (java, lua); '" + name +
                    "' is not one (the Mono module starts no control channel; a launcher's JVMs are other processes)");
    }

    // Everything is checked before the program starts.
    if (std::string e = ResolveClients(request.specs); !e.empty()) return Fail("run: " + e);
    // Each bundled client's options, by its own parser, before anything starts.
    if (std::string e = CheckClientOptions(request.specs); !e.empty()) return Fail("run: " + e);
    std::vector<std::string> looked;
    const std::string host = recipe->find(looked);
    if (host.empty()) return Fail("run: " + recipe->host + " was not found (looked at " + Join(looked, ", ") + ")");
    if (recipe->check != nullptr) {
        if (std::string e = recipe->check(request); !e.empty()) return Fail("run: " + e);
    }
    if (recipe->environment != nullptr) {
        for (const auto &[variable, value] : recipe->environment(host, request)) ::setenv(variable.c_str(), value.c_str(), 1);
    }
    LaunchPlan plan;
    plan.shownProgram = recipe->replacesProgram ? host : request.programPath;
    plan.provider = recipe->provider;
    plan.notStarted = recipe->notStarted;
    plan.readsJvmErrorLog = recipe->readsJvmErrorLog;
    plan.intervalMs = intervalMs;
    plan.prepare = [&](const std::string &outDir, Command &command) {
        return recipe->command(host, request, outDir, command);
    };
    return Launch(plan, request.specs, output);
}

}  // namespace martini::tools
