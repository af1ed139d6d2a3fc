// martini: the command people run. One file per command:
//
//   martini run ...       run.cpp (the runtimes it starts: runtimes.cpp; launch.cpp)
//   martini report ...    report.cpp
//   martini convert ...   convert.cpp
//   martini diff ...      diff.cpp
//   martini coverage ...  coverage_command.cpp
//   martini replay ...    replay_main.cpp (also martini-replay)
//   martini attach ...    attach_command.cpp (the attach mechanism: attach.cpp)
//   martini control ...   control.cpp
//   martini --version
//
// Exit status: the command's (see each file); 1 for no command or an unknown one.
#include "common.h"
#include "cli.h"
#include "tools.h"

#include <cstdio>
#include <string>

namespace {

using martini::tools::kVersion;

// `martini replay` calls itself so in its help and messages.
int Replay(int argc, char **argv) {
    return martini::tools::ReplayMain(martini::tools::ProgramName(argv[0]) + " replay", argc - 1, argv + 1);
}

// The commands, in the order of the usage text.
struct Subcommand {
    const char *name;
    int (*main)(int argc, char **argv);  // argv[1] is the command's name
    const char *summary;                 // its line in the usage text
};

constexpr Subcommand kCommands[] = {
    {"run", martini::tools::Run, "run a program under Martini with profiler clients"},
    {"report", martini::tools::Report, "print the top-N table of a JSON profile"},
    {"convert", martini::tools::Convert, "convert a JSON profile to collapsed stacks, Chrome trace, pprof or HTML"},
    {"diff", martini::tools::Diff, "compare two JSON profiles: the largest changes, a differential flame graph"},
    {"coverage", martini::tools::Coverage, "merge coverage tracefiles of many processes into one"},
    {"replay", Replay, "run clients over a recorded event trace, without a runtime"},
    {"attach", martini::tools::Attach, "profile a running JVM for a while, then leave it as it was"},
    {"control", martini::tools::Control, "pause, resume, sample, detach... the profilers in a running process"},
};

std::string Usage() {
    std::string usage =
        "usage: martini COMMAND [ARGS...]\n"
        "       martini --version\n"
        "\n";
    for (const Subcommand &c : kCommands) {
        std::string name = c.name;
        if (name.size() < 10) name.resize(10, ' ');
        usage += "  " + name + c.summary + "\n";
    }
    return usage + "\n`martini COMMAND --help` describes each.\n";
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fputs(Usage().c_str(), stderr);
        return 1;
    }
    const std::string command = argv[1];
    if (command == "-h" || command == "--help" || command == "help") {
        std::fputs(Usage().c_str(), stdout);
        return 0;
    }
    if (command == "--version") {
        std::printf("martini %s\n", kVersion);
        return 0;
    }
    for (const Subcommand &c : kCommands) {
        if (command == c.name) return c.main(argc, argv);
    }
    std::fprintf(stderr, "martini: unknown command '%s'\n%s", command.c_str(), Usage().c_str());
    return 1;
}
