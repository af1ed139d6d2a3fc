// Shared by the command-line tools (martini, martini-replay).
#pragma once

#include <string>
#include <vector>

namespace martini::tools {

// The directory of the running executable.
std::string ExecutableDir();
// The base name of argv[0] ("martini" for "build/tools/martini").
std::string ProgramName(const char *argv0);
// martini-replay's main (also `martini replay`): `program` is what it calls itself in
// help and messages ("martini-replay", "martini replay"); argv[0] is skipped.
int ReplayMain(const std::string &program, int argc, char **argv);

}  // namespace martini::tools
