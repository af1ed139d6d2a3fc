// Starting a profiled program and seeing it to its end: see launch.h.
//
// The program is forked first and waits on a pipe (the gate) before exec, so that
// everything that depends on its process id (the output directory's %p, the runtime's
// configuration) is made and checked while nothing runs yet; martini then writes the
// command into the gate, or closes it empty and the program never starts.
#include "launch.h"
#include "intervals.h"

#include "martini/clients/expand.h"
#include "martini/core/status.h"
#include "common.h"
#include "crash_report.h"
#include "run_status.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>
#include <utility>

namespace fs = std::filesystem;

namespace martini::tools {
namespace {

// The program run by `martini run`, while it runs (0 otherwise), for ForwardSignal.
volatile sig_atomic_t gProgram = 0;
volatile sig_atomic_t gForwarded = 0;

// Async-signal-safe: kill(2) only. Ctrl-C in a terminal reaches the program directly
// too (same process group); a second SIGINT during the JVM's shutdown is harmless.
void ForwardSignal(int sig) {
    if (gProgram > 0) ::kill(static_cast<pid_t>(gProgram), sig);
    gForwarded = sig;
}

// martini's temporary directory: the status file named in $MARTINI_STATUS_FILE, and
// the runtime's config.json when it takes one.
struct RunFiles {
    char dir[sizeof "/tmp/martini-run-XXXXXX"] = "/tmp/martini-run-XXXXXX";
    std::string status, config;
    void Remove() const {
        ::unlink(status.c_str());
        ::unlink(config.c_str());
        ::rmdir(dir);
    }
};

// The child, before exec: reads the command from the gate, as NUL-terminated strings
// (the number of environment entries, the entries, the path, then the arguments);
// nothing: martini gave up, do not start.
[[noreturn]] void ExecWhenTold(int gate) {
    std::string payload;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(gate, buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            ::_exit(127);
        }
        payload.append(buf, static_cast<std::size_t>(n));
    }
    if (payload.empty()) ::_exit(127);
    std::vector<char *> cargs;
    for (std::size_t pos = 0; pos < payload.size(); pos = payload.find('\0', pos) + 1) cargs.push_back(&payload[pos]);
    const std::size_t envCount = std::strtoul(cargs[0], nullptr, 10);
    for (std::size_t i = 1; i <= envCount && i < cargs.size(); ++i) ::putenv(cargs[i]);
    cargs.erase(cargs.begin(), cargs.begin() + static_cast<std::ptrdiff_t>(std::min(envCount + 1, cargs.size())));
    if (cargs.empty()) ::_exit(127);
    cargs.push_back(nullptr);
    ::execv(cargs[0], cargs.data() + 1);
    std::fprintf(stderr, "martini run: cannot start '%s': %s\n", cargs[0], std::strerror(errno));
    ::_exit(127);
}

void SendCommand(int gate, const Command &command) {
    std::string payload = std::to_string(command.env.size()) + '\0';
    for (const auto &e : command.env) payload += e + '\0';
    payload += command.path + '\0';
    for (const auto &a : command.args) payload += a + '\0';
    std::size_t done = 0;
    while (done < payload.size()) {
        const ssize_t n = ::write(gate, payload.data() + done, payload.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
}

// Forks the program, which waits on gate[0] (ExecWhenTold); returns its pid with
// gate[0] closed and the signals forwarded to it, or -1 (both ends closed).
pid_t ForkGated(int gate[2]) {
    // A signal that ends `martini run` ends the program the same way, and martini waits
    // for it so the clients write their outputs (as a shell running the program would).
    // Blocked across fork so that no signal comes before the handlers know the child.
    sigset_t forwarded, previous;
    sigemptyset(&forwarded);
    for (int sig : kForwardedSignals) sigaddset(&forwarded, sig);
    ::sigprocmask(SIG_BLOCK, &forwarded, &previous);
    const pid_t child = ::fork();
    if (child < 0) {
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        ::close(gate[0]);
        ::close(gate[1]);
        return child;
    }
    if (child == 0) {
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        ::close(gate[1]);
        ExecWhenTold(gate[0]);
    }
    ::close(gate[0]);
    gProgram = child;
    struct sigaction forward{};
    forward.sa_handler = ForwardSignal;  // no SA_RESTART: waitpid returns EINTR and waits again
    sigemptyset(&forward.sa_mask);
    for (int sig : kForwardedSignals) {
        // A signal martini was started ignoring (nohup, a background job of a script)
        // stays ignored: the program inherited that too and would not end by it.
        struct sigaction inherited{};
        ::sigaction(sig, nullptr, &inherited);
        if (inherited.sa_handler != SIG_IGN) ::sigaction(sig, &forward, nullptr);
    }
    ::signal(SIGQUIT, SIG_IGN);  // Ctrl-\ reaches the program (same process group): its thread dump
    ::signal(SIGPIPE, SIG_IGN);  // the gate's reader may be gone
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    return child;
}

// Everything that depends on the program's pid, checked before it starts: the output
// directory (`outDir`, absolute) and the command, written into the gate, which is
// closed. "" or why the program was not started.
std::string PrepareProgram(const LaunchPlan &plan, const std::string &outputOption, pid_t child,
                           std::time_t startTime, int gate, std::string &outDir) {
    const std::string output = clients::ExpandOutputName(outputOption, child, startTime);
    std::string problem = PrepareOutputDirectory(output);
    Command command;
    if (problem.empty()) {
        outDir = fs::weakly_canonical(fs::absolute(output)).string();
        problem = plan.prepare(outDir, command);
    }
    if (problem.empty()) SendCommand(gate, command);
    ::close(gate);
    return problem;
}

// The outputs: files the clients reported complete, and (clients that do not report)
// other new files in the output directory, never a temporary or a failed one.
void ListOutputs(const std::string &outDir, fs::file_time_type started, const RunStatus &st) {
    std::set<std::string> failedPaths;
    for (const auto &[path, cause] : st.failed) failedPaths.insert(path);
    std::set<std::string> seen;
    std::vector<std::pair<std::string, std::uintmax_t>> outputs;
    auto add = [&](const std::string &path) {
        std::error_code ec;
        const std::string canonical = fs::weakly_canonical(path, ec).string();
        if (failedPaths.count(path) || failedPaths.count(canonical) || !seen.insert(canonical).second) return;
        const auto size = fs::file_size(canonical, ec);
        if (!ec) outputs.emplace_back(canonical, size);
    };
    for (const auto &path : st.wrote) add(path);
    for (const auto &path : NewFilesIn(outDir, started)) add(path);
    std::sort(outputs.begin(), outputs.end());
    if (outputs.empty()) {
        std::fprintf(stderr, "martini: no output files were written to %s\n", outDir.c_str());
        return;
    }
    std::fprintf(stderr, "martini: outputs in %s:\n", outDir.c_str());
    for (const auto &[path, size] : outputs) {
        const std::string shown = path.rfind(outDir + "/", 0) == 0 ? path.substr(outDir.size() + 1) : path;
        std::fprintf(stderr, "  %-40s %10ju bytes\n", shown.c_str(), size);
    }
}

// What of the profile asked for is missing, by the run status.
std::vector<std::string> Missing(const RunStatus &st, const std::vector<core::ClientSpec> &specs,
                                 const LaunchPlan &plan) {
    if (!st.started) {
        if (!plan.notStarted.empty()) return {plan.notStarted};
        return {plan.provider + " did not start (no client was loaded): the program ran without profiling"};
    }
    std::vector<std::string> missing;
    for (std::string f : st.clientFailures) {
        // The agent knows the clients by resolved path; the user named them.
        for (const auto &spec : specs) {
            std::size_t at = 0;
            while (!spec.path.empty() && (at = f.find(spec.path, at)) != std::string::npos) {
                f.replace(at, spec.path.size(), spec.name);
                at += spec.name.size();
            }
        }
        missing.push_back(f);
    }
    if (st.loadedKnown && st.loaded == 0) {
        missing.push_back("no client was loaded: the program ran without profiling, no profile was written");
    } else if (st.loadedKnown && st.loaded < st.requested) {
        missing.push_back("only " + std::to_string(st.loaded) + " of " + std::to_string(st.requested) +
                          " clients were loaded: their profile is incomplete");
    }
    for (const auto &[path, cause] : st.failed) missing.push_back("not written: " + path + ": " + cause);
    return missing;
}

// After the program ended with `code`: the outputs, then what is missing; the exit status.
int Conclude(const LaunchPlan &plan, const std::vector<core::ClientSpec> &specs, pid_t child, int code,
             const RunStatus &st, const std::string &outDir, fs::file_time_type started) {
    ListOutputs(outDir, started, st);
    if (code != 0) std::fprintf(stderr, "martini: the program exited with status %d\n", code);

    // Last: what of the profile asked for is missing.
    std::vector<std::string> missing = Missing(st, specs, plan);
    if (plan.readsJvmErrorLog && code != 0) {
        // A JVM that crashed wrote its fatal error log in its working directory (ours).
        std::error_code ec;
        const std::string log = FindJvmErrorLog(child, fs::current_path(ec).string());
        std::vector<std::string> paths;
        for (const auto &spec : specs) paths.push_back(spec.path);
        if (std::string crash = NameCrashingClient(log, ClientNames(specs), paths); !log.empty() && !crash.empty()) {
            missing.push_back(std::move(crash));
        }
    }
    if (missing.empty()) return code;
    for (const auto &m : missing) std::fprintf(stderr, "martini: %s\n", m.c_str());
    std::fprintf(stderr, "martini: the profile you asked for was not produced in full\n");
    return code != 0 ? code : 1;
}

}  // namespace

int Launch(const LaunchPlan &plan, const std::vector<core::ClientSpec> &specs, const std::string &outputOption) {
    std::fprintf(stderr, "martini: running %s with %s\n", plan.shownProgram.c_str(), Join(ClientNames(specs), ", ").c_str());
    std::fflush(stderr);

    RunFiles files;
    if (::mkdtemp(files.dir) == nullptr) return Fail(std::string("run: cannot make a temporary directory: ") + std::strerror(errno));
    files.status = std::string(files.dir) + "/status";
    files.config = std::string(files.dir) + "/config.json";
    if (const int fd = ::open(files.status.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600); fd >= 0) {
        ::close(fd);
    } else {
        files.Remove();
        return Fail(std::string("run: cannot make the status file: ") + std::strerror(errno));
    }
    ::setenv(core::kStatusFileVariable, files.status.c_str(), 1);

    const auto started = fs::file_time_type::clock::now() - std::chrono::seconds(1);
    const std::time_t startTime = std::time(nullptr);
    int gate[2];
    if (::pipe2(gate, O_CLOEXEC) != 0) {
        files.Remove();
        return Fail(std::string("run: pipe failed: ") + std::strerror(errno));
    }
    const pid_t child = ForkGated(gate);
    if (child < 0) {
        files.Remove();
        return Fail(std::string("run: fork failed: ") + std::strerror(errno));
    }
    std::string outDir;
    const std::string problem = PrepareProgram(plan, outputOption, child, startTime, gate[1], outDir);
    int status = 0;
    {
        std::optional<IntervalPoints> intervals;
        if (problem.empty() && plan.intervalMs > 0) intervals.emplace(child, plan.intervalMs);
        while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
    }
    gProgram = 0;
    if (!problem.empty()) {
        files.Remove();
        return Fail("run: " + problem + "; the program was not started");
    }
    if (gForwarded != 0) {
        std::fprintf(stderr, "martini: %s was passed on to the program; it ended, and its profile was written\n",
                     strsignal(gForwarded));
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const RunStatus st = ReadRunStatus(files.status);
    files.Remove();
    return Conclude(plan, specs, child, code, st, outDir, started);
}

}  // namespace martini::tools
