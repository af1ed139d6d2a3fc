// Shared by the command-line tools (martini, martini-replay).
#pragma once

#include <string>
#include <vector>

namespace martini::tools {

// The directory of the running executable.
std::string ExecutableDir();
// martini-replay's main (also `martini replay`): argv[0] is the program name.
int ReplayMain(int argc, char **argv);

}  // namespace martini::tools
