// martini control: pauses, resumes, samples, detaches... the profilers in a running
// process (docs/control.md), through its control FIFO (attach.h: SendControl).
//
//   martini control PID pause|resume [--thread ID|NAME]
//   martini control PID sample NAME
//   martini control PID interval NAME
//   martini control PID terminate|detach
//   martini control PID output DIR
//   martini control PID custom ID [DATA]
//   martini control PID start|stop
//
// Exit status: 0 when the process carried the command out; 1 on any error (bad usage,
// no such process, no answer, the process's "error: ...").
#include "cli.h"
#include "attach.h"
#include "common.h"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace martini::tools {
namespace {

const char kControlUsage[] =
    "usage: martini control PID pause|resume [--thread ID|NAME]\n"
    "       martini control PID sample NAME\n"
    "       martini control PID interval NAME\n"
    "       martini control PID terminate|detach\n"
    "       martini control PID output DIR\n"
    "       martini control PID custom ID [DATA]\n"
    "       martini control PID start|stop";
const char kControlDescription[] =
    "Sends a command to Martini in the running process PID (a JVM under `martini run`\n"
    "or `martini attach`, or an interpreter using the C ABI) and waits until it was\n"
    "carried out. The clients get MPI's external-control events:\n"
    "  pause, resume          EcStop, EcStart (also called stop, start)\n"
    "  pause --thread T       EcCustomCommand 2 (resume: 3), the thread's id as data\n"
    "  sample NAME            EcCustomCommand 1: each client writes what it has so far,\n"
    "                         labelled NAME, and goes on\n"
    "  interval NAME          EcCustomCommand 4: each client that keeps intervals writes\n"
    "                         what it collected since the previous interval point,\n"
    "                         labelled NAME, and starts the next interval afresh\n"
    "  terminate, detach      EcDetach, then VmShutdown: the clients write their outputs;\n"
    "                         the program runs on without Martini (a JVM gets its\n"
    "                         original classes back, and can be attached to again)\n"
    "  output DIR             EcSetOutputDirectory\n"
    "  custom ID [DATA]       EcCustomCommand ID (from 256) with DATA\n"
    "Details: docs/control.md.";

}  // namespace

int Control(int argc, char **argv) {
    std::string pidText, command, thread;
    std::vector<std::string> args;
    CLI::App app(kControlDescription, "martini control");
    Configure(app, kControlUsage);
    app.add_option("pid", pidText, "the process id")->type_name("PID")->required();
    app.add_option("command", command, "the command")->type_name("COMMAND")->required();
    app.add_option("args", args, "the command's arguments")->type_name("ARGS");
    app.add_option("--thread", thread, "pause or resume this thread only (its id or name)")->type_name("ID|NAME");
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    const long pid = ParsePid(pidText);
    if (pid == 0) return Fail("control: '" + pidText + "' is not a process id");
    auto usage = [&](const std::string &what) { return Fail("control: " + what + "\n" + kControlUsage); };
    std::vector<std::string> words{command};
    // `output DIR`: the directories made for DIR go again when the command fails.
    std::vector<fs::path> created;
    struct Undo {
        std::vector<fs::path> &dirs;
        bool keep = false;
        ~Undo() {
            if (keep) return;
            for (const fs::path &d : dirs) ::rmdir(d.c_str());  // deepest first; only if empty
        }
    } undo{created};
    const bool pauseResume = command == "pause" || command == "resume";
    if (!thread.empty() && !pauseResume) return usage("--thread goes with pause and resume");
    if (pauseResume || command == "start" || command == "stop" || command == "terminate" || command == "detach") {
        if (!args.empty()) return usage("'" + command + "' takes no argument");
        if (!thread.empty()) words = {command + "-thread", thread};
    } else if (command == "sample" || command == "interval") {
        if (args.size() != 1) return usage("'" + command + "' takes one name");
        words.push_back(args[0]);
    } else if (command == "output") {
        if (args.size() != 1) return usage("'output' takes one directory");
        created = MissingDirectories(args[0]);
        if (std::string e = PrepareOutputDirectory(args[0]); !e.empty()) return Fail("control: " + e);
        words.push_back(fs::weakly_canonical(fs::absolute(args[0])).string());
    } else if (command == "custom") {
        if (args.empty() || args.size() > 2) return usage("'custom' takes an id and optional data");
        words.insert(words.end(), args.begin(), args.end());
    } else {
        return usage("unknown command '" + command + "'");
    }
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
        return Fail("control: no process " + std::to_string(pid) + " is running");
    }
    std::string reply;
    if (std::string e = SendControl(pid, words, reply); !e.empty()) return Fail("control: " + e);
    const std::string last = PrintNotes(pid, reply);
    if (last.rfind("ok ", 0) != 0) {
        return Fail("control: process " + std::to_string(pid) + ": " + (last.size() > 7 ? last.substr(7) : last));
    }
    std::fprintf(stderr, "martini: process %ld: %s\n", pid, last.substr(3).c_str());
    undo.keep = true;
    return 0;
}

}  // namespace martini::tools
