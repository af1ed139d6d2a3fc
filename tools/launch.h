// Starting a profiled program for `martini run` (run.cpp) and seeing it to its end:
// the run status handshake (run_status.h), the output directory made once the
// program's process id is known (--output %p), signals passed on to the program,
// the outputs listed and what of the profile asked for is missing said last.
#pragma once

#include "martini/core/client_spec.h"

#include <functional>
#include <string>
#include <vector>

namespace martini::tools {

// What the started program runs: its path and arguments (args[0] is what it is called),
// built once its process id is known (--output %p).
struct Command {
    std::string path;
    std::vector<std::string> args;
    std::vector<std::string> env;  // NAME=VALUE, set in the program's environment
};

// How one program is launched.
struct LaunchPlan {
    std::string shownProgram;  // in "martini: running PROGRAM with CLIENTS"
    std::string provider;      // what loads the clients, for "PROVIDER did not start"
    std::string notStarted;    // said instead when no provider started, if not empty
    bool readsJvmErrorLog = false;  // a failed exit may be a crash: name the client in hs_err
    long long intervalMs = 0;       // > 0: an interval point this often (intervals.h)
    // Builds the command for the output directory (absolute, %p and %t expanded); "" or
    // why the program cannot start. Runs in martini, after the status file is named in
    // $MARTINI_STATUS_FILE (its directory is martini's own temporary one, where
    // config.json may be written: it is removed with it).
    std::function<std::string(const std::string &outDir, Command &command)> prepare;
};

// Starts the program, waits for it with every signal that would end martini passed on
// to it, lists the files the clients wrote, says what is missing from the profile and
// returns the exit status: the program's (128+N when killed by signal N), else 1 when
// the profile asked for was not produced. The child waits before exec until
// `plan.prepare` has built the command; when it fails, the program never starts.
int Launch(const LaunchPlan &plan, const std::vector<core::ClientSpec> &specs, const std::string &outputOption);

}  // namespace martini::tools
