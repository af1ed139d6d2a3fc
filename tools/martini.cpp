// martini: the command people run.
//
//   martini run [--client NAME[=OPTIONS]]... [--output DIR] -- java ARGS...
//   martini run [--client NAME[=OPTIONS]]... [--output DIR] [--keep-aot] -- mono PROGRAM.exe ARGS...
//   martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME]
//   martini convert PROFILE.json --to collapsed|chrome|pprof|html|json [-o FILE]
//   martini replay --client NAME[=OPTIONS] [--output DIR] TRACE.jsonl
//   martini attach PID [--client NAME[=OPTIONS]]... [--duration TIME] [--output DIR]
//   martini control PID COMMAND [ARGS...]
//   martini --version
//
// Exit status: the program's own for `run` (128+N when killed by signal N), else 1
// when the profile asked for was not produced (no client loaded, an output not
// written: see the run status handshake below); 0 on success and 1 on any error for
// the others (replay: see replay_main.cpp).
#include "martini/clients/expand.h"
#include "martini/clients/output_file.h"
#include "martini/core/client_spec.h"
#include "martini/core/status.h"
#include "martini/report/profile.h"
#include "cli.h"
#include "attach.h"
#include "crash_report.h"
#include "run_status.h"
#include "tools.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace report = martini::report;
using martini::tools::ExecutableDir;
using martini::tools::Configure;
using martini::tools::Parse;
using martini::tools::ReadRunStatus;
using martini::tools::RunStatus;

namespace {

const char kUsage[] =
    "usage: martini COMMAND [ARGS...]\n"
    "       martini --version\n"
    "\n"
    "  run       run a program under Martini with profiler clients\n"
    "  report    print the top-N table of a JSON profile\n"
    "  convert   convert a JSON profile to collapsed stacks, Chrome trace, pprof or HTML\n"
    "  replay    run clients over a recorded event trace, without a runtime\n"
    "  attach    profile a running JVM for a while, then leave it as it was\n"
    "  control   pause, resume, sample, detach... the profilers in a running process\n"
    "\n"
    "`martini COMMAND --help` describes each.\n";

const char kRunUsage[] =
    "usage: martini run [--client NAME[=OPTIONS]]... [--output DIR] -- java ARGS...\n"
    "       martini run [--client NAME[=OPTIONS]]... [--output DIR] [--keep-aot] -- mono PROGRAM.exe ARGS...\n"
    "       martini run [--client NAME[=OPTIONS]]... [--output DIR] -- lua SCRIPT ARGS...";

const char kRunDescription[] =
    "Runs the program with the given profiler clients and says where their outputs\n"
    "went: java under the JVMTI agent, mono under the Mono profiler module (with --debug\n"
    "for line numbers, and -O=-aot when a client may want calls: AOT-compiled code raises\n"
    "no call events; --keep-aot keeps Mono's AOT images), a Lua 5.4 script under\n"
    "martini-lua (the Lua host of the interpreter C ABI). Everything after the program's\n"
    "name is the program's.";

const char kRunFooter[] =
    "The agent is looked up in $MARTINI_JVMTI_AGENT, the Mono module in\n"
    "$MARTINI_MONO_MODULE, then each in the installation (<libdir>/martini) and the\n"
    "build tree; clients in $MARTINI_CLIENT_PATH, then in\n"
    "<libdir>/martini/clients and the build tree (docs/configuration.md). The output\n"
    "directory is created and checked to be writable before the program starts. The\n"
    "exit status is the program's; when it is 0 but the profile asked for was not\n"
    "produced (no client loaded, an output file not written), martini says so last and\n"
    "exits with 1. A signal that ends martini is passed on to the program, which is\n"
    "waited for so the clients write their files.";

const char kReportUsage[] = "usage: martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME]";
const char kReportDescription[] =
    "Prints the top-N methods of a profile (all threads merged, or one thread) by self\n"
    "value of the metric (default: wall time when measured, else the profile's own).";

const char kConvertUsage[] = "usage: martini convert PROFILE.json --to FORMAT [-o FILE]";
const char kConvertDescription[] =
    "FORMAT: collapsed (flamegraph.pl, inferno, speedscope), chrome (Perfetto UI),\n"
    "pprof (go tool pprof), html (self-contained flame graph report), json.\n"
    "Without -o the output goes next to the profile: NAME.collapsed, NAME.trace.json,\n"
    "NAME.pb.gz, NAME.html.";

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

// `message` starts with the command ("run: ..."): printed as "martini run: ...", the
// way CLI11's errors are (tools/cli.h).
int Fail(const std::string &message) {
    std::fprintf(stderr, "martini %s\n", message.c_str());
    return 1;
}

// The program as execvp would find it, or "" when it is not there.
std::string FindProgram(const std::string &name) {
    if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
    const char *path = std::getenv("PATH");
    std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= p.size()) {
        const std::size_t end = p.find(':', start);
        std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (dir.empty()) dir = ".";
        const std::string candidate = dir + "/" + name;
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return "";
}

// The installed libdir relative to the installed bindir ("../lib/x86_64-linux-gnu"),
// from Meson (tools/meson.build); a build without it assumes the plain layout.
#ifndef MARTINI_BINDIR_TO_LIBDIR
#define MARTINI_BINDIR_TO_LIBDIR "../lib"
#endif

// The JVMTI agent: installed in <libdir>/martini (the libdir Martini was configured
// with, found from <bindir>), or in the build tree.
std::string FindAgent(std::vector<std::string> &looked) {
    if (const char *env = std::getenv("MARTINI_JVMTI_AGENT")) {
        looked.push_back(env);
        return ::access(env, R_OK) == 0 ? env : "";
    }
    const std::string exe = ExecutableDir();
    for (const std::string &candidate : {exe + "/" MARTINI_BINDIR_TO_LIBDIR "/martini/libmartini-jvmti.so",
                                         exe + "/../providers/jvmti/libmartini-jvmti.so"}) {
        looked.push_back(candidate);
        if (::access(candidate.c_str(), R_OK) == 0) return fs::weakly_canonical(candidate).string();
    }
    return "";
}

// The Mono profiler module libmono-profiler-martini.so: $MARTINI_MONO_MODULE, then the
// installation (<libdir>/martini) and the build tree. Mono finds it by its directory
// in LD_LIBRARY_PATH (it takes no path in --profile=).
std::string FindMonoModule(std::vector<std::string> &looked) {
    if (const char *env = std::getenv("MARTINI_MONO_MODULE")) {
        looked.push_back(env);
        return ::access(env, R_OK) == 0 && fs::path(env).filename() == "libmono-profiler-martini.so" ? env : "";
    }
    const std::string exe = ExecutableDir();
    for (const std::string &candidate : {exe + "/" MARTINI_BINDIR_TO_LIBDIR "/martini/libmono-profiler-martini.so",
                                         exe + "/../providers/mono/libmono-profiler-martini.so"}) {
        looked.push_back(candidate);
        if (::access(candidate.c_str(), R_OK) == 0) return fs::weakly_canonical(candidate).string();
    }
    return "";
}

// Clients that observe no call events, so that Mono may keep its AOT code: the bundled
// ones known not to (cgprof in sample mode takes SampleHit). Any other client may.
bool WantsNoCalls(const martini::core::ClientSpec &s) {
    if (s.name == "heapprof" || s.name == "threadprof") return true;
    if (s.name == "cgprof") {
        std::stringstream in(s.options);
        for (std::string o; std::getline(in, o, ',');) {
            if (o == "sample" || o.rfind("sample=", 0) == 0) return true;
        }
    }
    return false;
}

std::string Join(const std::vector<std::string> &items, const char *sep) {
    std::string out;
    for (const auto &s : items) out += (out.empty() ? "" : sep) + s;
    return out;
}

// The program run by `martini run`, while it runs (0 otherwise), for ForwardSignal.
volatile sig_atomic_t gProgram = 0;
volatile sig_atomic_t gForwarded = 0;
constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP};

// Async-signal-safe: kill(2) only. Ctrl-C in a terminal reaches the program directly
// too (same process group); a second SIGINT during the JVM's shutdown is harmless.
void ForwardSignal(int sig) {
    if (gProgram > 0) ::kill(static_cast<pid_t>(gProgram), sig);
    gForwarded = sig;
}

// Creates `dir` and checks that a file can be created and removed in it; "" or why not.
std::string PrepareOutputDirectory(const std::string &dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return "cannot create the output directory '" + dir + "': " + ec.message();
    const std::string probe = dir + "/.martini-write-test-" + std::to_string(::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return "cannot write to the output directory '" + dir + "': " + std::strerror(errno);
    ::close(fd);
    if (::unlink(probe.c_str()) != 0) {
        return "cannot remove a file from the output directory '" + dir + "': " + std::strerror(errno);
    }
    return "";
}

// What the started program runs: its path and arguments (args[0] is what it is called),
// built once its process id is known (--output %p).
struct Command {
    std::string path;
    std::vector<std::string> args;
};

// Starts the program, waits for it with every signal that would end martini passed on
// to it, lists the files the clients wrote, says what is missing from the profile and
// returns the exit status. The child waits before exec until `prepare(pid, outDir,
// command)` has made the output directory (with %p expanded to its pid) and built the
// command; when prepare fails, the program never starts.
int Launch(const std::string &shownProgram, const std::vector<martini::core::ClientSpec> &specs,
           const std::string &outputOption, bool lua, const std::string &providerName,
           const std::function<std::string(const std::string &outDir, Command &command)> &prepare) {
    std::fprintf(stderr, "martini: running %s with %s\n", shownProgram.c_str(),
                 Join([&] {
                     std::vector<std::string> names;
                     for (const auto &s : specs) names.push_back(s.name);
                     return names;
                 }(), ", ").c_str());
    std::fflush(stderr);

    char tempDir[] = "/tmp/martini-run-XXXXXX";
    if (::mkdtemp(tempDir) == nullptr) return Fail(std::string("run: cannot make a temporary directory: ") + std::strerror(errno));
    const std::string statusPath = std::string(tempDir) + "/status";
    const std::string configPath = std::string(tempDir) + "/config.json";
    auto cleanup = [&] {
        ::unlink(statusPath.c_str());
        ::unlink(configPath.c_str());
        ::rmdir(tempDir);
    };
    if (const int fd = ::open(statusPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600); fd >= 0) {
        ::close(fd);
    } else {
        cleanup();
        return Fail(std::string("run: cannot make the status file: ") + std::strerror(errno));
    }
    ::setenv(martini::core::kStatusFileVariable, statusPath.c_str(), 1);

    const auto started = fs::file_time_type::clock::now() - std::chrono::seconds(1);
    const std::time_t startTime = std::time(nullptr);
    int gate[2];
    if (::pipe2(gate, O_CLOEXEC) != 0) {
        cleanup();
        return Fail(std::string("run: pipe failed: ") + std::strerror(errno));
    }
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
        cleanup();
        return Fail(std::string("run: fork failed: ") + std::strerror(errno));
    }
    if (child == 0) {
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        ::close(gate[1]);
        // The command, as NUL-terminated strings; nothing: martini gave up, do not start.
        std::string payload;
        char buf[4096];
        ssize_t n;
        while ((n = ::read(gate[0], buf, sizeof buf)) != 0) {
            if (n < 0) {
                if (errno == EINTR) continue;
                ::_exit(127);
            }
            payload.append(buf, static_cast<std::size_t>(n));
        }
        if (payload.empty()) ::_exit(127);
        std::vector<char *> cargs;
        for (std::size_t pos = 0; pos < payload.size(); pos = payload.find('\0', pos) + 1) cargs.push_back(&payload[pos]);
        cargs.push_back(nullptr);
        ::execv(cargs[0], cargs.data() + 1);
        std::fprintf(stderr, "martini run: cannot start '%s': %s\n", cargs[0], std::strerror(errno));
        ::_exit(127);
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

    // Everything that depends on the program's pid, checked before it starts.
    const std::string output = martini::clients::ExpandOutputName(outputOption, child, startTime);
    std::string outDir;
    std::string problem = PrepareOutputDirectory(output);
    Command command;
    if (problem.empty()) {
        outDir = fs::weakly_canonical(fs::absolute(output)).string();
        problem = prepare(outDir, command);
    }
    if (problem.empty()) {
        std::string payload = command.path + '\0';
        for (const auto &a : command.args) payload += a + '\0';
        std::size_t done = 0;
        while (done < payload.size()) {
            const ssize_t n = ::write(gate[1], payload.data() + done, payload.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            done += static_cast<std::size_t>(n);
        }
    }
    ::close(gate[1]);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    gProgram = 0;
    if (!problem.empty()) {
        cleanup();
        return Fail("run: " + problem + "; the program was not started");
    }
    if (gForwarded != 0) {
        std::fprintf(stderr, "martini: %s was passed on to the program; it ended, and its profile was written\n",
                     strsignal(gForwarded));
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const RunStatus st = ReadRunStatus(statusPath);
    cleanup();

    // The outputs: files the clients reported complete, and (clients that do not report)
    // other new files in the output directory, never a temporary or a failed one.
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
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(outDir, ec)) {
        const std::string name = entry.path().filename().string();
        const bool temporary = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
        if (!temporary && entry.is_regular_file() && entry.last_write_time() >= started) add(entry.path().string());
    }
    std::sort(outputs.begin(), outputs.end());
    if (outputs.empty()) {
        std::fprintf(stderr, "martini: no output files were written to %s\n", outDir.c_str());
    } else {
        std::fprintf(stderr, "martini: outputs in %s:\n", outDir.c_str());
        for (const auto &[path, size] : outputs) {
            const std::string shown = path.rfind(outDir + "/", 0) == 0 ? path.substr(outDir.size() + 1) : path;
            std::fprintf(stderr, "  %-40s %10ju bytes\n", shown.c_str(), size);
        }
    }
    if (code != 0) std::fprintf(stderr, "martini: the program exited with status %d\n", code);

    // Last: what of the profile asked for is missing.
    std::vector<std::string> missing;
    if (!st.started) {
        missing.push_back(providerName +
                          " did not start (no client was loaded): the program ran without profiling");
    } else {
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
    }
    if (!lua && providerName == "the JVMTI agent" && code != 0) {
        // A JVM that crashed wrote its fatal error log in its working directory (ours).
        const std::string log = martini::tools::FindJvmErrorLog(child, fs::current_path(ec).string());
        std::vector<std::string> names, paths;
        for (const auto &spec : specs) {
            names.push_back(spec.name);
            paths.push_back(spec.path);
        }
        if (std::string crash = martini::tools::NameCrashingClient(log, names, paths); !log.empty() && !crash.empty()) {
            missing.push_back(std::move(crash));
        }
    }
    if (missing.empty()) return code;
    for (const auto &m : missing) std::fprintf(stderr, "martini: %s\n", m.c_str());
    std::fprintf(stderr, "martini: the profile you asked for was not produced in full\n");
    return code != 0 ? code : 1;
}

// martini-lua, the Lua host of the interpreter C ABI: next to this program (installed)
// or in the build tree.
std::string FindLuaHost(std::vector<std::string> &looked) {
    const std::string exe = ExecutableDir();
    for (const std::string &candidate : {exe + "/martini-lua", exe + "/../providers/interp/martini-lua"}) {
        looked.push_back(candidate);
        if (::access(candidate.c_str(), X_OK) == 0) return fs::weakly_canonical(candidate).string();
    }
    return "";
}

// A client for martini-lua's --client: path=options, with ';' and '\' escaped.
std::string ClientArgument(const martini::core::ClientSpec &s) {
    std::string out = s.path;
    if (s.options.empty()) return out;
    out += '=';
    for (char c : s.options) {
        if (c == ';' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

bool IsLua(const std::string &base) { return base == "lua" || base == "lua5.4" || base == "lua54"; }

// The bundled clients: lib<name>.so in the client search directories (installed), or
// <name>/lib<name>.so (build tree).
std::vector<std::string> BundledClients() {
    std::set<std::string> names;
    auto nameOf = [](const std::string &file) -> std::string {
        if (file.size() > 6 && file.rfind("lib", 0) == 0 && file.compare(file.size() - 3, 3, ".so") == 0) {
            return file.substr(3, file.size() - 6);
        }
        return "";
    };
    for (const auto &dir : martini::core::ClientSearchDirs(ExecutableDir())) {
        std::error_code ec;
        for (const auto &entry : fs::directory_iterator(dir, ec)) {
            const std::string file = entry.path().filename().string();
            std::error_code ec2;
            if (entry.is_regular_file(ec2)) {
                if (const std::string n = nameOf(file); !n.empty()) names.insert(n);
            } else if (entry.is_directory(ec2) && fs::is_regular_file(entry.path() / ("lib" + file + ".so"), ec2)) {
                names.insert(file);
            }
        }
    }
    return {names.begin(), names.end()};
}

int Run(int argc, char **argv) {
    std::vector<std::string> clientOptions;
    std::string output = "martini-out";
    bool keepAot = false;
    CLI::App app(kRunDescription, "martini run");
    const std::vector<std::string> bundled = BundledClients();
    Configure(app, kRunUsage, kRunFooter);
    app.add_option("--client", clientOptions,
                   "a bundled client's name or a client library's path, optionally with\n"
                   "=OPTIONS (`--client cgprof=help` lists cgprof's); repeatable;\n"
                   "default: cgprof. Bundled: " +
                       (bundled.empty() ? std::string("none found") : Join(bundled, ", ")))
        ->type_name("SPEC")
        ->allow_extra_args(false);
    app.add_option("--output", output,
                   "where clients write their files (default: ./martini-out); %p: the\n"
                   "program's process id, %t: its start time (YYYYmmdd-HHMMSS)")
        ->type_name("DIR");
    app.add_flag("--keep-aot", keepAot,
                 "mono: keep Mono's AOT-compiled code (faster start, but its methods raise\n"
                 "no call events: the call graph misses them; the profiler says how many)");
    // The program and its arguments, untouched (options included): all that follows "--"
    // or the first argument that is not martini's option.
    app.prefix_command();
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    if (output.empty()) return Fail("run: --output needs a directory");
    std::vector<martini::core::ClientSpec> specs;
    for (const auto &value : clientOptions) {
        if (std::string e = martini::core::ParseClientList(value, specs); !e.empty()) return Fail("run: " + e);
    }
    std::vector<std::string> program = app.remaining();
    // Before the program (no program's name starts with '-'): an option of martini's
    // that it does not know.
    if (!program.empty() && program[0] != "--" && program[0].size() > 1 && program[0][0] == '-') {
        std::fprintf(stderr, "martini run: unknown option '%s'\nRun 'martini run --help' for more information.\n",
                     program[0].c_str());
        return 1;
    }
    if (!program.empty() && program[0] == "--") program.erase(program.begin());
    if (program.empty()) {
        std::fprintf(stderr, "martini run: no program given\n%s\nRun 'martini run --help' for more information.\n", kRunUsage);
        return 1;
    }
    // A Lua script runs under martini-lua in place of lua, which need not be installed.
    const bool lua = IsLua(fs::path(program[0]).filename().string());
    const std::string programPath = lua ? program[0] : FindProgram(program[0]);
    if (programPath.empty()) return Fail("run: program not found: '" + program[0] + "' (not an executable file, nor in $PATH)");
    const std::string base = fs::path(programPath).filename().string();
    const bool mono = base == "mono" || base == "mono-sgen";
    if (base != "java" && !lua && !mono) {
        return Fail("run: cannot profile '" + program[0] +
                    "': martini run starts java programs (java ARGS...), mono programs (mono PROGRAM.exe ARGS...) "
                    "and Lua scripts (lua SCRIPT ARGS...)");
    }
    if (specs.empty()) specs.push_back({"cgprof", "", ""});

    // Everything is checked before the program starts.
    const auto dirs = martini::core::ClientSearchDirs(ExecutableDir());
    for (auto &spec : specs) {
        if (std::string e = martini::core::ResolveClientPath(spec, dirs); !e.empty()) return Fail("run: " + e);
        spec.path = fs::weakly_canonical(spec.path).string();
    }
    std::vector<std::string> looked;
    const std::string runtime = lua ? FindLuaHost(looked) : mono ? FindMonoModule(looked) : FindAgent(looked);
    if (runtime.empty()) {
        return Fail(std::string("run: ") +
                    (lua ? "martini-lua" : mono ? "the Mono profiler module libmono-profiler-martini.so"
                                                : "the JVMTI agent libmartini-jvmti.so") +
                    " was not found (looked at " + Join(looked, ", ") + ")");
    }
    if (mono) {
        // Mono looks the module up by name: its directory goes first in LD_LIBRARY_PATH
        // (inherited by the program). Mono says nothing when it cannot load it; the run
        // status handshake tells (no line: the module never started).
        const std::string dir = fs::path(runtime).parent_path().string();
        const char *old = std::getenv("LD_LIBRARY_PATH");
        ::setenv("LD_LIBRARY_PATH", (old != nullptr && *old != '\0' ? dir + ":" + old : dir).c_str(), 1);
        const bool callsWanted = !std::all_of(specs.begin(), specs.end(), WantsNoCalls);
        std::string configPath;
        return Launch(programPath, specs, output, false, "the Mono profiler module", [&](const std::string &outDir, Command &command) -> std::string {
            configPath = fs::path(std::getenv(martini::core::kStatusFileVariable)).parent_path() / "config.json";
            const std::string text = martini::core::ClientConfigJson({specs, outDir});
            const int fd = ::open(configPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            if (fd < 0) return std::string("cannot write the module's configuration: ") + std::strerror(errno);
            const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
            ::close(fd);
            if (!written) return "cannot write the module's configuration";
            command.path = programPath;
            command.args = {program[0]};
            // Line numbers need Mono's debug mode; a complete call graph needs JIT code.
            if (std::find(program.begin() + 1, program.end(), "--debug") == program.end()) command.args.push_back("--debug");
            if (callsWanted && !keepAot) command.args.push_back("-O=-aot");
            command.args.push_back("--profile=martini:@" + configPath);
            command.args.insert(command.args.end(), program.begin() + 1, program.end());
            return "";
        });
    }
    if (lua && (program.size() < 2 || program[1].empty() || program[1][0] == '-')) {
        return Fail("run: give the Lua script to profile (lua SCRIPT ARGS...); lua's own options are not supported");
    }

    if (lua) {
        // martini-lua is Lua with the interpreter C ABI built in: it replaces lua.
        return Launch(runtime, specs, output, true, "martini-lua", [&](const std::string &outDir, Command &command) -> std::string {
            command.path = runtime;
            command.args = {runtime};
            for (const auto &s : specs) {
                command.args.push_back("--client");
                command.args.push_back(ClientArgument(s));
            }
            command.args.push_back("--output");
            command.args.push_back(outDir);
            command.args.push_back("--");
            command.args.insert(command.args.end(), program.begin() + 1, program.end());
            return "";
        });
    }
    const std::string &agent = runtime;
    std::string configPath;
    return Launch(programPath, specs, output, false, "the JVMTI agent", [&](const std::string &outDir, Command &command) -> std::string {
        // The agent's configuration: clients by resolved path, and the output directory;
        // next to the status file, in martini's temporary directory.
        configPath = fs::path(std::getenv(martini::core::kStatusFileVariable)).parent_path() / "config.json";
        const std::string text = martini::core::ClientConfigJson({specs, outDir});
        const int fd = ::open(configPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) return std::string("cannot write the agent's configuration: ") + std::strerror(errno);
        const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
        ::close(fd);
        if (!written) return "cannot write the agent's configuration";
        command.path = programPath;
        command.args = {program[0], "-agentpath:" + agent + "=@" + configPath};
        command.args.insert(command.args.end(), program.begin() + 1, program.end());
        return "";
    });
}

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
        e = martini::clients::WriteFileAtomicallyTo(out, [&](const std::string &tmp) { return report::WritePprof(p, tmp); });
    } else {
        e = martini::clients::WriteFileAtomically(out, [&](std::ostream &o) {
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

// A process id given on the command line; 0 when it is not one.
long ParsePid(const std::string &text) {
    char *end = nullptr;
    const long pid = std::strtol(text.c_str(), &end, 10);
    return !text.empty() && *end == '\0' && pid > 0 ? pid : 0;
}

// Prints a control reply's notes; returns its last line ("ok ..." or "error: ...").
std::string PrintNotes(long pid, const std::string &reply) {
    std::istringstream lines(reply);
    std::string line, last;
    while (std::getline(lines, line)) {
        if (line.rfind("note: ", 0) == 0) std::fprintf(stderr, "martini: process %ld: %s\n", pid, line.substr(6).c_str());
        else if (!line.empty()) last = line;
    }
    return last;
}

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
    if (std::string e = martini::tools::SendControl(pid, words, reply); !e.empty()) return Fail("control: " + e);
    const std::string last = PrintNotes(pid, reply);
    if (last.rfind("ok ", 0) != 0) {
        return Fail("control: process " + std::to_string(pid) + ": " + (last.size() > 7 ? last.substr(7) : last));
    }
    std::fprintf(stderr, "martini: process %ld: %s\n", pid, last.substr(3).c_str());
    return 0;
}

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

int Attach(int argc, char **argv) {
    std::string pidText, duration, output = "martini-out";
    std::vector<std::string> clientOptions;
    CLI::App app(kAttachDescription, "martini attach");
    Configure(app, kAttachUsage);
    app.add_option("pid", pidText, "the JVM's process id")->type_name("PID")->required();
    app.add_option("--client", clientOptions, "a client, as for `martini run` (repeatable; default: cgprof)")
        ->type_name("SPEC")
        ->allow_extra_args(false);
    app.add_option("--duration", duration, "how long to profile (30s, 500ms, 2m; default: until Ctrl-C)")
        ->type_name("TIME");
    app.add_option("--output", output, "where clients write their files (default: ./martini-out)")->type_name("DIR");
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    const long pid = ParsePid(pidText);
    if (pid == 0) return Fail("attach: '" + pidText + "' is not a process id");
    long long durationMs = 0;
    if (!duration.empty() && (durationMs = ParseDurationMs(duration)) < 0) {
        return Fail("attach: --duration '" + duration + "' is not a time (30s, 500ms, 2m)");
    }
    std::vector<martini::core::ClientSpec> specs;
    for (const auto &value : clientOptions) {
        if (std::string e = martini::core::ParseClientList(value, specs); !e.empty()) return Fail("attach: " + e);
    }
    if (specs.empty()) specs.push_back({"cgprof", "", ""});
    const auto dirs = martini::core::ClientSearchDirs(ExecutableDir());
    for (auto &spec : specs) {
        if (std::string e = martini::core::ResolveClientPath(spec, dirs); !e.empty()) return Fail("attach: " + e);
        spec.path = fs::weakly_canonical(spec.path).string();
    }
    std::vector<std::string> looked;
    const std::string agent = FindAgent(looked);
    if (agent.empty()) {
        return Fail("attach: the JVMTI agent libmartini-jvmti.so was not found (looked at " + Join(looked, ", ") + ")");
    }
    if (std::string e = martini::tools::CheckAttachable(pid); !e.empty()) return Fail("attach: " + e);
    if (std::string e = PrepareOutputDirectory(output); !e.empty()) return Fail("attach: " + e);
    const std::string outDir = fs::weakly_canonical(fs::absolute(output)).string();

    // The agent's configuration, where the JVM sees it (its /tmp).
    std::string tempDir = martini::tools::InTargetRoot(pid, "/tmp/martini-attach-XXXXXX");
    if (::mkdtemp(tempDir.data()) == nullptr) return Fail(std::string("attach: cannot make a temporary directory: ") + std::strerror(errno));
    ::chmod(tempDir.c_str(), 0755);
    const std::string configPath = tempDir + "/config.json";
    const std::string configInTarget = "/tmp/" + tempDir.substr(tempDir.rfind('/') + 1) + "/config.json";
    {
        const std::string text = martini::core::ClientConfigJson({specs, outDir});
        std::ofstream out(configPath);
        out << text;
        if (!out) {
            ::rmdir(tempDir.c_str());
            return Fail("attach: cannot write the agent's configuration " + configPath);
        }
    }
    ::chmod(configPath.c_str(), 0644);
    auto cleanup = [&] {
        ::unlink(configPath.c_str());
        ::rmdir(tempDir.c_str());
    };
    const auto started = fs::file_time_type::clock::now() - std::chrono::seconds(1);
    std::fprintf(stderr, "martini: attaching to process %ld with %s\n", pid,
                 Join([&] {
                     std::vector<std::string> names;
                     for (const auto &s : specs) names.push_back(s.name);
                     return names;
                 }(), ", ").c_str());
    const std::string loaded = martini::tools::LoadAgent(pid, agent, "@" + configInTarget);
    cleanup();
    if (!loaded.empty()) return Fail("attach: process " + std::to_string(pid) + ": " + loaded);

    // Profiling: until the duration ends, a signal comes, or the JVM ends.
    struct sigaction stop{};
    stop.sa_handler = StopAttach;
    sigemptyset(&stop.sa_mask);
    for (int sig : kForwardedSignals) ::sigaction(sig, &stop, nullptr);
    std::fprintf(stderr, "martini: profiling process %ld %s\n", pid,
                 durationMs > 0 ? ("for " + duration).c_str() : "until Ctrl-C");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(durationMs);
    bool ended = false;
    while (gStopAttach == 0 && (durationMs == 0 || std::chrono::steady_clock::now() < deadline)) {
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
            ended = true;
            break;
        }
        ::usleep(20000);
    }
    int code = 0;
    if (ended) {
        std::fprintf(stderr, "martini: process %ld ended; its clients wrote their outputs as it ended\n", pid);
    } else {
        std::string reply;
        if (std::string e = martini::tools::SendControl(pid, {"detach"}, reply, 60000); !e.empty()) {
            Fail("attach: detach: " + e);
            code = 1;
        } else {
            const std::string last = PrintNotes(pid, reply);
            if (last.rfind("ok ", 0) != 0) {
                Fail("attach: detach: " + (last.size() > 7 ? last.substr(7) : last));
                code = 1;
            } else {
                std::fprintf(stderr, "martini: detached from process %ld\n", pid);
            }
        }
    }
    std::vector<std::pair<std::string, std::uintmax_t>> outputs;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(outDir, ec)) {
        const std::string name = entry.path().filename().string();
        const bool temporary = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
        if (!temporary && entry.is_regular_file() && entry.last_write_time() >= started) {
            outputs.emplace_back(entry.path().string(), entry.file_size());
        }
    }
    std::sort(outputs.begin(), outputs.end());
    if (outputs.empty()) {
        return Fail("attach: no output files were written to " + outDir);
    }
    std::fprintf(stderr, "martini: outputs in %s:\n", outDir.c_str());
    for (const auto &[path, size] : outputs) {
        std::fprintf(stderr, "  %-40s %10ju bytes\n", path.substr(outDir.size() + 1).c_str(), size);
    }
    // The clients printed their tables in the JVM's terminal, not here: the top methods
    // of each JSON profile written, as `martini report` prints them.
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

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fputs(kUsage, stderr);
        return 1;
    }
    const std::string command = argv[1];
    if (command == "-h" || command == "--help" || command == "help") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    if (command == "--version") {
        std::printf("martini %s\n", martini::tools::kVersion);
        return 0;
    }
    if (command == "run") return Run(argc, argv);
    if (command == "report") return Report(argc, argv);
    if (command == "convert") return Convert(argc, argv);
    // `martini replay` calls itself so in its help and messages.
    if (command == "replay") return martini::tools::ReplayMain(martini::tools::ProgramName(argv[0]) + " replay", argc - 1, argv + 1);
    if (command == "control") return Control(argc, argv);
    if (command == "attach") return Attach(argc, argv);
    std::fprintf(stderr, "martini: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 1;
}
