// martini attach: profiles a running JVM for a while, then leaves it as it was.
//
//   martini attach PID [--client NAME[=OPTIONS]]... [--duration TIME] [--output DIR]
//
// Loads the JVMTI agent into the JVM (HotSpot's dynamic attach, attach.h), waits for
// the duration, Ctrl-C or SIGTERM, or the JVM's end, then detaches (`martini control
// PID detach`), lists the outputs and prints the top methods of each JSON profile.
//
// Exit status: 0 when outputs were written and the detach was carried out; 1 when no
// output was written, the detach failed, or on any other error.
#include "martini/report/profile.h"
#include "cli.h"
#include "attach.h"
#include "common.h"
#include "intervals.h"
#include "runtimes.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
namespace report = martini::report;

namespace martini::tools {
namespace {

const char kAttachUsage[] =
    "usage: martini attach PID [--client NAME[=OPTIONS]]... [--duration TIME] [--interval TIME] [--output DIR]";
const char kAttachDescription[] =
    "Loads Martini into the running JVM PID (HotSpot's dynamic attach; no JDK tool is\n"
    "needed), profiles it with the clients for TIME (30s, 500ms, 2m; default: until\n"
    "Ctrl-C), then detaches: the clients write their outputs, the JVM's classes get\n"
    "their original bytes back and it runs on at full speed. Ctrl-C or SIGTERM detaches\n"
    "early. Lists the outputs; exits with 1 when none was written. The JVM must be\n"
    "yours (or run as root), see the agent, the clients and DIR at the same paths, and\n"
    "not be started with -XX:+DisableAttachMechanism.";

volatile sig_atomic_t gStopAttach = 0;
void StopAttach(int sig) { gStopAttach = sig; }

// What `martini attach` was asked.
struct AttachRequest {
    long pid = 0;
    std::string duration;  // as given ("30s"), "" for until Ctrl-C
    long long durationMs = 0;
    std::string interval;  // as given ("60s"), "" for none
    long long intervalMs = 0;
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
    app.add_option("--interval", request.interval,
                   "continuous profiling: an interval point every TIME, each client that keeps\n"
                   "intervals writing <name>-N.* with only that interval (60s, 500ms, 2m)")
        ->type_name("TIME");
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    request.pid = ParsePid(pidText);
    if (request.pid == 0) return Fail("attach: '" + pidText + "' is not a process id");
    if (!request.duration.empty() && (request.durationMs = ParseDurationMs(request.duration)) < 0) {
        return Fail("attach: --duration '" + request.duration + "' is not a time (30s, 500ms, 2m)");
    }
    if (!request.interval.empty() && (request.intervalMs = ParseDurationMs(request.interval)) < 0) {
        return Fail("attach: --interval '" + request.interval + "' is not a time (60s, 500ms, 2m)");
    }
    if (std::string e = ParseClients(clientOptions, request.specs); !e.empty()) return Fail("attach: " + e);
    if (std::string e = ResolveClients(request.specs); !e.empty()) return Fail("attach: " + e);
    if (std::string e = CheckClientOptions(request.specs); !e.empty()) return Fail("attach: " + e);
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
    std::optional<IntervalPoints> intervals;
    if (request.intervalMs > 0) intervals.emplace(request.pid, request.intervalMs);
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
