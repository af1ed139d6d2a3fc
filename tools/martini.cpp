// martini: the command people run. `martini run` is in run.cpp (the runtimes it
// starts: runtimes.cpp; launch.cpp), replay in replay_main.cpp; report, convert,
// attach and control here.
//
//   martini run ...       run.cpp
//   martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME]
//   martini convert PROFILE.json --to collapsed|chrome|pprof|html|json [-o FILE]
//   martini replay --client NAME[=OPTIONS] [--output DIR] TRACE.jsonl
//   martini attach PID [--client NAME[=OPTIONS]]... [--duration TIME] [--output DIR]
//   martini control PID COMMAND [ARGS...]
//   martini --version
//
// Exit status: the command's (run: see run.cpp; replay: see replay_main.cpp); 0 on
// success and 1 on any error for the others.
#include "martini/clients/output_file.h"
#include "martini/report/profile.h"
#include "cli.h"
#include "attach.h"
#include "common.h"
#include "runtimes.h"
#include "tools.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
namespace report = martini::report;

namespace martini::tools {

namespace {

const char kReportUsage[] = "usage: martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME]";
const char kReportDescription[] =
    "Prints the top-N methods of a profile (all threads merged, or one thread) by self\n"
    "value of the metric (default: wall time when measured, else the profile's own).";

}  // namespace

int Report(int argc, char **argv) {
    std::string file, thread, metric;
    std::size_t top = 20;
    CLI::App app(kReportDescription, "martini report");
    Configure(app, kReportUsage);
    app.add_option("profile", file, "a profile in Martini's JSON format")->type_name("PROFILE.json")->required();
    app.add_option("--top", top, "rows (default 20)")->type_name("N");
    app.add_option("--thread", thread, "one thread, by id or name (default: all merged)")->type_name("ID|NAME");
    app.add_option("--metric", metric, "rank by this metric (wall, cpu, calls, ...)")->type_name("NAME");
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    report::Profile p;
    if (std::string e = report::ReadJsonFile(file, p); !e.empty()) return Fail("report: " + e);
    if (!thread.empty()) {
        auto it = std::find_if(p.threads.begin(), p.threads.end(), [&](const report::Tree &t) {
            return t.threadName == thread || std::to_string(t.threadId) == thread;
        });
        if (it == p.threads.end()) {
            std::vector<std::string> known;
            for (const auto &t : p.threads) known.push_back(std::to_string(t.threadId) + " (" + t.threadName + ")");
            return Fail("report: no thread '" + thread + "' in the profile; it has " + Join(known, ", "));
        }
        report::Tree one = *it;
        p.threads = {one};
        p.merged = one;
    }
    int rankBy = -1;
    if (!metric.empty()) {
        const int index = p.MetricIndex(metric);
        if (index < 0) {
            std::vector<std::string> known;
            for (const auto &m : p.metrics) known.push_back(m.name);
            return Fail("report: no metric '" + metric + "' in the profile; it has " + Join(known, ", "));
        }
        rankBy = index;
    }
    report::WriteTopTable(p, std::cout, top, rankBy);
    return 0;
}

namespace {

const char kConvertUsage[] = "usage: martini convert PROFILE.json --to FORMAT [-o FILE]";
const char kConvertDescription[] =
    "FORMAT: collapsed (flamegraph.pl, inferno, speedscope), chrome (Perfetto UI),\n"
    "pprof (go tool pprof), html (self-contained flame graph report), json.\n"
    "Without -o the output goes next to the profile: NAME.collapsed, NAME.trace.json,\n"
    "NAME.pb.gz, NAME.html.";

}  // namespace

int Convert(int argc, char **argv) {
    std::string file, to, out;
    CLI::App app(kConvertDescription, "martini convert");
    Configure(app, kConvertUsage);
    app.add_option("profile", file, "a profile in Martini's JSON format")->type_name("PROFILE.json")->required();
    app.add_option("--to", to, "collapsed, chrome, pprof, html or json")->type_name("FORMAT")->required();
    app.add_option("-o,--output", out, "the file to write (default: next to the profile)")->type_name("FILE");
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    report::Format format;
    if (to == "collapsed") format = report::kCollapsed;
    else if (to == "chrome") format = report::kChrome;
    else if (to == "pprof") format = report::kPprof;
    else if (to == "html") format = report::kHtml;
    else if (to == "json") format = report::kJson;
    else return Fail("convert: unknown format '" + to + "' (collapsed, chrome, pprof, html or json)");
    report::Profile p;
    if (std::string e = report::ReadJsonFile(file, p); !e.empty()) return Fail("convert: " + e);
    if (out.empty()) {
        std::string base = file;
        if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0) base.resize(base.size() - 5);
        out = report::FileName(base, format);
        if (out == file) return Fail("convert: the output would overwrite the input; give -o FILE");
    }
    // Complete or absent: written under a temporary name, then renamed.
    std::string e;
    if (format == report::kPprof) {
        e = clients::WriteFileAtomicallyTo(out, [&](const std::string &tmp) { return report::WritePprof(p, tmp); });
    } else {
        e = clients::WriteFileAtomically(out, [&](std::ostream &o) {
            switch (format) {
                case report::kCollapsed: report::WriteCollapsed(p, o, p.defaultMetric); break;
                case report::kChrome: report::WriteChromeTrace(p, o); break;
                case report::kHtml: report::WriteHtml(p, o); break;
                default: report::WriteJson(p, o); break;
            }
        });
    }
    if (!e.empty()) return Fail("convert: " + e);
    std::fprintf(stderr, "martini: wrote %s\n", out.c_str());
    return 0;
}

namespace {

const char kControlUsage[] =
    "usage: martini control PID pause|resume [--thread ID|NAME]\n"
    "       martini control PID sample NAME\n"
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
    const bool pauseResume = command == "pause" || command == "resume";
    if (!thread.empty() && !pauseResume) return usage("--thread goes with pause and resume");
    if (pauseResume || command == "start" || command == "stop" || command == "terminate" || command == "detach") {
        if (!args.empty()) return usage("'" + command + "' takes no argument");
        if (!thread.empty()) words = {command + "-thread", thread};
    } else if (command == "sample") {
        if (args.size() != 1) return usage("'sample' takes one name");
        words.push_back(args[0]);
    } else if (command == "output") {
        if (args.size() != 1) return usage("'output' takes one directory");
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
    return 0;
}

namespace {

const char kAttachUsage[] =
    "usage: martini attach PID [--client NAME[=OPTIONS]]... [--duration TIME] [--output DIR]";
const char kAttachDescription[] =
    "Loads Martini into the running JVM PID (HotSpot's dynamic attach; no JDK tool is\n"
    "needed), profiles it with the clients for TIME (30s, 500ms, 2m; default: until\n"
    "Ctrl-C), then detaches: the clients write their outputs, the JVM's classes get\n"
    "their original bytes back and it runs on at full speed. Ctrl-C or SIGTERM detaches\n"
    "early. Lists the outputs; exits with 1 when none was written. The JVM must be\n"
    "yours (or run as root), see the agent, the clients and DIR at the same paths, and\n"
    "not be started with -XX:+DisableAttachMechanism.";

// "30s", "500ms", "2m", "1h", or seconds; -1 when not a time.
long long ParseDurationMs(const std::string &text) {
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (...) {
        return -1;
    }
    const std::string unit = text.substr(used);
    double scale = 0;
    if (unit.empty() || unit == "s") scale = 1000;
    else if (unit == "ms") scale = 1;
    else if (unit == "m" || unit == "min") scale = 60000;
    else if (unit == "h") scale = 3600000;
    if (scale == 0 || !(value > 0) || value * scale > 1e12) return -1;
    return static_cast<long long>(value * scale);
}

volatile sig_atomic_t gStopAttach = 0;
void StopAttach(int sig) { gStopAttach = sig; }

// What `martini attach` was asked.
struct AttachRequest {
    long pid = 0;
    std::string duration;  // as given ("30s"), "" for until Ctrl-C
    long long durationMs = 0;
    std::string output = "martini-out";
    std::vector<core::ClientSpec> specs;  // resolved
};

// The command line, checked and the clients resolved; -1 to go on, else the exit status.
int ParseAttach(int argc, char **argv, AttachRequest &request) {
    std::string pidText;
    std::vector<std::string> clientOptions;
    CLI::App app(kAttachDescription, "martini attach");
    Configure(app, kAttachUsage);
    app.add_option("pid", pidText, "the JVM's process id")->type_name("PID")->required();
    app.add_option("--client", clientOptions, "a client, as for `martini run` (repeatable; default: cgprof)")
        ->type_name("SPEC")
        ->allow_extra_args(false);
    app.add_option("--duration", request.duration, "how long to profile (30s, 500ms, 2m; default: until Ctrl-C)")
        ->type_name("TIME");
    app.add_option("--output", request.output, "where clients write their files (default: ./martini-out)")
        ->type_name("DIR");
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    request.pid = ParsePid(pidText);
    if (request.pid == 0) return Fail("attach: '" + pidText + "' is not a process id");
    if (!request.duration.empty() && (request.durationMs = ParseDurationMs(request.duration)) < 0) {
        return Fail("attach: --duration '" + request.duration + "' is not a time (30s, 500ms, 2m)");
    }
    if (std::string e = ParseClients(clientOptions, request.specs); !e.empty()) return Fail("attach: " + e);
    if (std::string e = ResolveClients(request.specs); !e.empty()) return Fail("attach: " + e);
    return -1;
}

// The agent's configuration, where the JVM sees it (its /tmp), in a directory of its
// own: `configPath` as seen here, `configInTarget` as the JVM sees it. "" or why not.
std::string WriteAttachConfig(const AttachRequest &request, const std::string &outDir, std::string &tempDir,
                              std::string &configPath, std::string &configInTarget) {
    tempDir = InTargetRoot(request.pid, "/tmp/martini-attach-XXXXXX");
    if (::mkdtemp(tempDir.data()) == nullptr) return std::string("cannot make a temporary directory: ") + std::strerror(errno);
    ::chmod(tempDir.c_str(), 0755);
    configPath = tempDir + "/config.json";
    configInTarget = "/tmp/" + tempDir.substr(tempDir.rfind('/') + 1) + "/config.json";
    {
        const std::string text = core::ClientConfigJson({request.specs, outDir});
        std::ofstream out(configPath);
        out << text;
        if (!out) {
            ::rmdir(tempDir.c_str());
            return "cannot write the agent's configuration " + configPath;
        }
    }
    ::chmod(configPath.c_str(), 0644);
    return "";
}

// Profiling: until the duration ends, a signal comes, or the JVM ends (then true).
bool ProfileUntilDone(const AttachRequest &request) {
    struct sigaction stop{};
    stop.sa_handler = StopAttach;
    sigemptyset(&stop.sa_mask);
    for (int sig : kForwardedSignals) ::sigaction(sig, &stop, nullptr);
    std::fprintf(stderr, "martini: profiling process %ld %s\n", request.pid,
                 request.durationMs > 0 ? ("for " + request.duration).c_str() : "until Ctrl-C");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(request.durationMs);
    while (gStopAttach == 0 && (request.durationMs == 0 || std::chrono::steady_clock::now() < deadline)) {
        if (::kill(static_cast<pid_t>(request.pid), 0) != 0 && errno == ESRCH) return true;
        ::usleep(20000);
    }
    return false;
}

// Detaches Martini from the JVM: the exit status so far (1 when it was not carried out).
int Detach(long pid) {
    std::string reply;
    if (std::string e = SendControl(pid, {"detach"}, reply, 60000); !e.empty()) return Fail("attach: detach: " + e);
    const std::string last = PrintNotes(pid, reply);
    if (last.rfind("ok ", 0) != 0) return Fail("attach: detach: " + (last.size() > 7 ? last.substr(7) : last));
    std::fprintf(stderr, "martini: detached from process %ld\n", pid);
    return 0;
}

// The outputs written since `started`, listed; then, as the clients printed their
// tables in the JVM's terminal, not here, the top methods of each JSON profile, as
// `martini report` prints them. Returns `code`, or 1 when there is no output.
int ListOutputs(const std::string &outDir, std::filesystem::file_time_type started, int code) {
    std::vector<std::pair<std::string, std::uintmax_t>> outputs;
    for (const std::string &path : NewFilesIn(outDir, started)) outputs.emplace_back(path, fs::file_size(path));
    std::sort(outputs.begin(), outputs.end());
    if (outputs.empty()) {
        return Fail("attach: no output files were written to " + outDir);
    }
    std::fprintf(stderr, "martini: outputs in %s:\n", outDir.c_str());
    for (const auto &[path, size] : outputs) {
        std::fprintf(stderr, "  %-40s %10ju bytes\n", path.substr(outDir.size() + 1).c_str(), size);
    }
    for (const auto &[path, size] : outputs) {
        if (path.size() < 5 || path.compare(path.size() - 5, 5, ".json") != 0) continue;
        report::Profile p;
        if (!report::ReadJsonFile(path, p).empty()) continue;
        std::printf("%s:\n", path.substr(outDir.size() + 1).c_str());
        report::WriteTopTable(p, std::cout, 10);
    }
    return code;
}

}  // namespace

int Attach(int argc, char **argv) {
    AttachRequest request;
    if (const int code = ParseAttach(argc, argv, request); code >= 0) return code;
    const long pid = request.pid;
    std::vector<std::string> looked;
    const std::string agent = FindJvmtiAgent(looked);
    if (agent.empty()) {
        return Fail("attach: the JVMTI agent libmartini-jvmti.so was not found (looked at " + Join(looked, ", ") + ")");
    }
    if (std::string e = CheckAttachable(pid); !e.empty()) return Fail("attach: " + e);
    if (std::string e = PrepareOutputDirectory(request.output); !e.empty()) return Fail("attach: " + e);
    const std::string outDir = fs::weakly_canonical(fs::absolute(request.output)).string();

    std::string tempDir, configPath, configInTarget;
    if (std::string e = WriteAttachConfig(request, outDir, tempDir, configPath, configInTarget); !e.empty()) {
        return Fail("attach: " + e);
    }
    const auto started = fs::file_time_type::clock::now() - std::chrono::seconds(1);
    std::fprintf(stderr, "martini: attaching to process %ld with %s\n", pid, Join(ClientNames(request.specs), ", ").c_str());
    const std::string loaded = LoadAgent(pid, agent, "@" + configInTarget);
    ::unlink(configPath.c_str());
    ::rmdir(tempDir.c_str());
    if (!loaded.empty()) return Fail("attach: process " + std::to_string(pid) + ": " + loaded);

    int code = 0;
    if (ProfileUntilDone(request)) {
        std::fprintf(stderr, "martini: process %ld ended; its clients wrote their outputs as it ended\n", pid);
    } else {
        code = Detach(pid);
    }
    return ListOutputs(outDir, started, code);
}

}  // namespace martini::tools

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
