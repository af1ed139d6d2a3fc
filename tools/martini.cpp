// martini: the command people run.
//
//   martini run [--client NAME[=OPTIONS]]... [--output DIR] -- java ARGS...
//   martini run [--client NAME[=OPTIONS]]... [--output DIR] [--keep-aot] -- mono PROGRAM.exe ARGS...
//   martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME]
//   martini convert PROFILE.json --to collapsed|chrome|pprof|html|json [-o FILE]
//   martini replay --client NAME[=OPTIONS] [--output DIR] TRACE.jsonl
//   martini control PID start|stop
//   martini --version
//
// Exit status: the program's own for `run` (128+N when killed by signal N), else 1
// when the profile asked for was not produced (no client loaded, an output not
// written: see the run status handshake below); 0 on success and 1 on any error for
// the others (replay: see replay_main.cpp).
#include "martini/clients/expand.h"
#include "martini/core/client_spec.h"
#include "martini/core/status.h"
#include "martini/report/profile.h"
#include "cli.h"
#include "crash_report.h"
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

namespace {

const char kUsage[] =
    "usage: martini COMMAND [ARGS...]\n"
    "       martini --version\n"
    "\n"
    "  run       run a program under Martini with profiler clients\n"
    "  report    print the top-N table of a JSON profile\n"
    "  convert   convert a JSON profile to collapsed stacks, Chrome trace, pprof or HTML\n"
    "  replay    run clients over a recorded event trace, without a runtime\n"
    "  control   pause or resume the profilers of a running JVM (start, stop)\n"
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

const char kControlUsage[] = "usage: martini control PID start|stop";
const char kControlDescription[] =
    "Sends a command to the Martini agent in the JVM with process id PID: its clients get\n"
    "EcStop (stop: cgprof pauses; time while paused is not charged) or EcStart (start:\n"
    "they resume; with cgprof=paused the profile starts here). Waits until the agent has\n"
    "carried the command out. The agent listens on /tmp/martini-PID.ctl while some\n"
    "client observes these events.";

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

// ---- The run status handshake --------------------------------------------------------
// martini run creates an empty status file and names it in $MARTINI_STATUS_FILE for the
// program. Inside it, the core's LoadClients appends "loaded N of M clients" and
// "client NAME failed: CAUSE" (martini/core/status.h), the bundled clients "wrote PATH"
// or "failed PATH: CAUSE" per output file (martini/clients/status.h).
struct RunStatus {
    bool started = false;  // some line at all: the provider ran LoadClients
    bool loadedKnown = false;
    unsigned loaded = 0, requested = 0;
    std::vector<std::string> clientFailures;  // "client NAME failed: CAUSE", "error: CAUSE"
    std::vector<std::string> wrote;           // absolute paths
    std::vector<std::pair<std::string, std::string>> failed;  // path, cause
};

RunStatus ReadRunStatus(const std::string &path) {
    RunStatus st;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        st.started = true;
        unsigned n = 0, m = 0;
        if (std::sscanf(line.c_str(), "loaded %u of %u clients", &n, &m) == 2) {
            st.loadedKnown = true;
            st.loaded += n;  // a program that starts the runtime twice (forks) adds up
            st.requested += m;
        } else if (line.rfind("client ", 0) == 0 || line.rfind("error: ", 0) == 0) {
            st.clientFailures.push_back(line);
        } else if (line.rfind("wrote ", 0) == 0) {
            st.wrote.push_back(line.substr(6));
        } else if (line.rfind("failed ", 0) == 0) {
            const std::string rest = line.substr(7);
            // PATH: CAUSE; a path may hold ": " itself, a cause rarely starts with '/'
            const auto colon = rest.rfind(": ");
            st.failed.emplace_back(colon == std::string::npos ? rest : rest.substr(0, colon),
                                   colon == std::string::npos ? "" : rest.substr(colon + 2));
        }
    }
    return st;
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
    for (int sig : kForwardedSignals) ::sigaction(sig, &forward, nullptr);
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
    if (format == report::kPprof) {
        if (std::string e = report::WritePprof(p, out); !e.empty()) return Fail("convert: " + e);
    } else {
        std::ofstream o(out, std::ios::binary | std::ios::trunc);
        if (!o) return Fail("convert: cannot write '" + out + "': " + std::strerror(errno));
        switch (format) {
            case report::kCollapsed: report::WriteCollapsed(p, o, p.defaultMetric); break;
            case report::kChrome: report::WriteChromeTrace(p, o); break;
            case report::kHtml: report::WriteHtml(p, o); break;
            default: report::WriteJson(p, o); break;
        }
        o.flush();
        if (!o) return Fail("convert: cannot write '" + out + "': " + std::strerror(errno));
    }
    std::fprintf(stderr, "martini: wrote %s\n", out.c_str());
    return 0;
}

int Control(int argc, char **argv) {
    std::vector<std::string> args;
    std::string pidText, command;
    CLI::App app(kControlDescription, "martini control");
    Configure(app, kControlUsage);
    app.add_option("pid", pidText, "the JVM's process id")->type_name("PID")->required();
    app.add_option("command", command, "start or stop")->type_name("start|stop")->required();
    if (const int code = Parse(app, argc - 1, argv + 1); code >= 0) return code;
    args = {pidText, command};
    char *end = nullptr;
    const long pid = std::strtol(args[0].c_str(), &end, 10);
    if (args[0].empty() || *end != '\0' || pid <= 0) return Fail("control: '" + args[0] + "' is not a process id");
    if (command != "start" && command != "stop") return Fail("control: unknown command '" + command + "' (start, stop)");
    // The agent's FIFO (providers/jvmti/src/control.cpp).
    const std::string path = "/tmp/martini-" + std::to_string(pid) + ".ctl";
    int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENXIO) {
            return Fail("control: no Martini agent is listening in process " + std::to_string(pid) +
                        " (not running, not under Martini, or no client that pauses)");
        }
        return Fail("control: cannot open " + path + ": " + std::strerror(errno));
    }
    // A reply FIFO of our own, open before the command goes out, so the agent can
    // answer once it has carried the command out.
    char dir[] = "/tmp/martini-control-XXXXXX";
    if (::mkdtemp(dir) == nullptr) {
        ::close(fd);
        return Fail(std::string("control: cannot make a reply directory: ") + std::strerror(errno));
    }
    const std::string reply = std::string(dir) + "/reply";
    int replyFd = -1;
    if (::mkfifo(reply.c_str(), 0600) == 0) replyFd = ::open(reply.c_str(), O_RDONLY | O_NONBLOCK);
    auto cleanup = [&] {
        if (replyFd >= 0) ::close(replyFd);
        ::unlink(reply.c_str());
        ::rmdir(dir);
    };
    const std::string line = command + " " + reply + "\n";
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    if (!ok) {
        cleanup();
        return Fail("control: cannot write to " + path + ": " + std::strerror(errno));
    }
    std::string answer;
    for (int i = 0; i < 500 && replyFd >= 0 && answer.find('\n') == std::string::npos; ++i) {
        char buf[64];
        const ssize_t n = ::read(replyFd, buf, sizeof buf);
        if (n > 0) answer.append(buf, static_cast<std::size_t>(n));
        else ::usleep(10000);
    }
    cleanup();
    if (answer.rfind("ok ", 0) == 0) {
        std::fprintf(stderr, "martini: process %ld: %s\n", pid, command.c_str());
        return 0;
    }
    return Fail("control: process " + std::to_string(pid) + " did not take the command within 5 s");
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
    std::fprintf(stderr, "martini: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 1;
}
