// The runtimes `martini run` starts programs under, one recipe each (runtimes.cpp): the
// program names it recognises, the Martini part it needs (the JVMTI agent, the Mono
// profiler module, the martini-lua host) and how it is found, and how the command
// line and environment are built for the clients and the output directory. Adding a
// runtime or a launcher is adding a row to the table.
#pragma once

#include "martini/core/client_spec.h"
#include "launch.h"

#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace martini::tools {

// What `martini run` was asked to run.
struct RunRequest {
    std::vector<std::string> program;     // as given: its name, then its arguments
    std::string programPath;              // as found in $PATH (a host that replaces it: as given)
    std::vector<core::ClientSpec> specs;  // resolved: spec.path is the library
    std::set<std::string> flags;          // the runtime flags given ("--keep-aot")
};

// An option of `martini run` that only one runtime reads.
struct RuntimeFlag {
    std::string name;  // "--keep-aot"
    std::string help;
};

struct RuntimeRecipe {
    std::vector<std::string> names{};  // the program's base names that select this recipe (none: any other)
    std::string starts{};              // "java programs (java ARGS...)", for a program no recipe has
    std::string host{};                // what `find` looks for, for "HOST was not found"
    std::string provider{};            // what loads the clients, for "PROVIDER did not start"
    std::string notStarted{};          // said instead when no provider started, if not empty
    // The host runs in place of the program, which need not be installed (martini-lua
    // for lua); it is the program shown as running.
    bool replacesProgram = false;
    bool readsJvmErrorLog = false;  // a failed exit may be a JVM crash (hs_err_pid<PID>.log)
    bool controlChannel = false;    // the program's process reads `martini control` commands
    std::vector<RuntimeFlag> flags{};
    // The host's path, "" when not found; every place looked at goes into `looked`.
    std::string (*find)(std::vector<std::string> &looked) = nullptr;
    // When not null: "" when the request can be run, else why not.
    std::string (*check)(const RunRequest &request) = nullptr;
    // When not null: variables set in martini's environment (inherited by the program)
    // before it starts.
    std::vector<std::pair<std::string, std::string>> (*environment)(const std::string &host,
                                                                    const RunRequest &request) = nullptr;
    // The command (LaunchPlan::prepare): "" or why the program cannot start.
    std::string (*command)(const std::string &host, const RunRequest &request, const std::string &outDir,
                           Command &command) = nullptr;
};

// Every runtime, in the order of `martini run`'s help; then the launcher, for any other
// command.
std::span<const RuntimeRecipe> Runtimes();
const RuntimeRecipe &Launcher();

// The recipe recognising a program by its base name; for any other program, the
// launcher's (the JVMs and Mono runtimes it starts take Martini from the environment).
const RuntimeRecipe *RecipeFor(const std::string &baseName);

// The JVMTI agent libmartini-jvmti.so ($MARTINI_JVMTI_AGENT, the installation, the
// build tree), as `martini attach` loads it too.
std::string FindJvmtiAgent(std::vector<std::string> &looked);

}  // namespace martini::tools
