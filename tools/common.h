// What the `martini` commands share (martini.cpp dispatches to them, one file each):
// messages, the program and output directory checks, clients named on the command
// line, and the replies of a process under control.
#pragma once

#include "martini/core/client_spec.h"

#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

namespace martini::tools {

// The commands: argv[0] is "martini", argv[1] the command's name.
int Run(int argc, char **argv);      // run.cpp
int Report(int argc, char **argv);   // report.cpp
int Convert(int argc, char **argv);  // convert.cpp
int Diff(int argc, char **argv);     // diff.cpp
int Coverage(int argc, char **argv); // coverage_command.cpp
int Attach(int argc, char **argv);   // attach_command.cpp
int Control(int argc, char **argv);  // control.cpp

// The signals that end martini and are passed on to the program it runs (or, for
// `martini attach`, end the profiling early).
inline constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP};

// `message` starts with the command ("run: ..."): printed as "martini run: ...", the
// way CLI11's errors are (tools/cli.h). Returns 1, the exit status.
int Fail(const std::string &message);

// The program as execvp would find it, or "" when it is not there.
std::string FindProgram(const std::string &name);

std::string Join(const std::vector<std::string> &items, const char *sep);

// Creates `dir` and checks that a file can be created and removed in it; "" or why not.
std::string PrepareOutputDirectory(const std::string &dir);
// The directories PrepareOutputDirectory(dir) would make, deepest first (none when
// `dir` exists).
std::vector<std::filesystem::path> MissingDirectories(const std::string &dir);

// The regular files in `dir` written since `since`, temporaries (*.tmp) left out, in
// the directory's order.
std::vector<std::string> NewFilesIn(const std::string &dir, std::filesystem::file_time_type since);

// The clients' names, as the user gave them.
std::vector<std::string> ClientNames(const std::vector<core::ClientSpec> &specs);

// Every --client value, parsed into `specs`; "" or the first problem.
std::string ParseClients(const std::vector<std::string> &values, std::vector<core::ClientSpec> &specs);

// cgprof when no client was given; then each client's library found (its canonical
// path in spec.path). "" or the first client that was not found.
std::string ResolveClients(std::vector<core::ClientSpec> &specs);

// Each client's options checked before the program starts, without a runtime: every
// resolved library (spec.path) that exports MPICL_CheckOptions
// (martini/clients/option_names.h; the bundled clients do) is loaded and asked. ""
// when all are good, else "client 'NAME': PROBLEM" for the first that is not
// ("client 'cgprof': unknown option 'tpo' (did you mean 'top'?)"; for NAME=help, the
// client's usage, several lines). Libraries without the export, or that cannot be
// loaded here, are left to the runtime.
std::string CheckClientOptions(const std::vector<core::ClientSpec> &specs);

// A process id given on the command line; 0 when it is not one.
long ParsePid(const std::string &text);

// Prints a control reply's notes; returns its last line ("ok ..." or "error: ...").
std::string PrintNotes(long pid, const std::string &reply);

}  // namespace martini::tools
