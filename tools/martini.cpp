// martini: the command people run.
//
//   martini run [--client NAME[=OPTIONS]]... [--output DIR] -- java ARGS...
//   martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME]
//   martini convert PROFILE.json --to collapsed|chrome|pprof|html|json [-o FILE]
//   martini replay --client NAME[=OPTIONS] TRACE.jsonl
//   martini control PID start|stop
//
// Exit status: the program's own for `run` (128+N when killed by signal N); 0 on
// success and 1 on any error for the others (replay: see replay_main.cpp).
#include "martini/core/client_spec.h"
#include "martini/report/profile.h"
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
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace report = martini::report;
using martini::tools::ExecutableDir;

namespace {

const char kUsage[] =
    "usage: martini COMMAND [ARGS...]\n"
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
    "       martini run [--client NAME[=OPTIONS]]... [--output DIR] -- lua SCRIPT ARGS...\n"
    "\n"
    "Runs the program with the given profiler clients and says where their outputs\n"
    "went: java under the JVMTI agent, a Lua 5.4 script under martini-lua (the Lua host\n"
    "of the interpreter C ABI).\n"
    "\n"
    "  --client SPEC   a bundled client's name (cgprof, callcount) or a client library's\n"
    "                  path, optionally with =OPTIONS (`--client cgprof=help` lists\n"
    "                  cgprof's); repeatable; default: cgprof\n"
    "  --output DIR    where clients write their files (default: ./martini-out)\n"
    "  -h, --help      this text\n"
    "\n"
    "The agent is looked up in $MARTINI_JVMTI_AGENT, then next to this program; clients\n"
    "in $MARTINI_CLIENT_PATH, then next to this program. The exit status is the\n"
    "program's.\n";

const char kReportUsage[] =
    "usage: martini report PROFILE.json [--top N] [--thread ID|NAME] [--metric NAME]\n"
    "\n"
    "Prints the top-N methods of a profile (all threads merged, or one thread) by self\n"
    "value of the metric (default: wall time when measured, else the profile's own).\n";

const char kConvertUsage[] =
    "usage: martini convert PROFILE.json --to FORMAT [-o FILE]\n"
    "\n"
    "FORMAT: collapsed (flamegraph.pl, inferno, speedscope), chrome (Perfetto UI),\n"
    "pprof (go tool pprof), html (self-contained flame graph report), json.\n"
    "Without -o the output goes next to the profile: NAME.collapsed, NAME.trace.json,\n"
    "NAME.pb.gz, NAME.html.\n";

const char kControlUsage[] =
    "usage: martini control PID start|stop\n"
    "\n"
    "Sends a command to the Martini agent in the JVM with process id PID: its clients get\n"
    "EcStop (stop: cgprof pauses; time while paused is not charged) or EcStart (start:\n"
    "they resume; with cgprof=paused the profile starts here). Waits until the agent has\n"
    "carried the command out. The agent listens on /tmp/martini-PID.ctl while some\n"
    "client observes these events.\n";

int Fail(const std::string &message) {
    std::fprintf(stderr, "martini: %s\n", message.c_str());
    return 1;
}

bool IsHelp(const std::string &a) { return a == "-h" || a == "--help"; }

// `--name VALUE` or `--name=VALUE`; advances i. Returns false when it is not `name`.
bool TakeValue(int argc, char **argv, int &i, const std::string &name, std::string &value, std::string &error) {
    const std::string arg = argv[i];
    if (arg == name) {
        if (i + 1 >= argc) {
            error = name + " needs a value";
            return true;
        }
        value = argv[++i];
        return true;
    }
    if (arg.rfind(name + "=", 0) == 0) {
        value = arg.substr(name.size() + 1);
        return true;
    }
    return false;
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

// Starts the program (args[0] is what it is called), waits for it with every signal that
// would end martini passed on to it, lists the files the clients wrote to outDir, and
// returns its exit status.
int Launch(const std::string &programPath, std::vector<std::string> args,
           const std::vector<martini::core::ClientSpec> &specs, const std::string &outDir) {
    std::vector<char *> cargs;
    for (auto &a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);

    std::fprintf(stderr, "martini: running %s with %s\n", programPath.c_str(),
                 Join([&] {
                     std::vector<std::string> names;
                     for (const auto &s : specs) names.push_back(s.name);
                     return names;
                 }(), ", ").c_str());
    std::fflush(stderr);
    const auto started = fs::file_time_type::clock::now() - std::chrono::seconds(1);
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
        return Fail(std::string("run: fork failed: ") + std::strerror(errno));
    }
    if (child == 0) {
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        ::execv(programPath.c_str(), cargs.data());
        std::fprintf(stderr, "martini: run: cannot start '%s': %s\n", programPath.c_str(), std::strerror(errno));
        ::_exit(127);
    }
    gProgram = child;
    struct sigaction forward{};
    forward.sa_handler = ForwardSignal;  // no SA_RESTART: waitpid returns EINTR and waits again
    sigemptyset(&forward.sa_mask);
    for (int sig : kForwardedSignals) ::sigaction(sig, &forward, nullptr);
    ::signal(SIGQUIT, SIG_IGN);  // Ctrl-\ reaches the program (same process group): its thread dump
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    gProgram = 0;
    if (gForwarded != 0) {
        std::fprintf(stderr, "martini: %s was passed on to the program; it ended, and its profile was written\n",
                     strsignal(gForwarded));
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

    std::vector<std::pair<std::string, std::uintmax_t>> outputs;
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(outDir, ec)) {
        if (entry.is_regular_file() && entry.last_write_time() >= started) {
            outputs.emplace_back(entry.path().string(), entry.file_size());
        }
    }
    std::sort(outputs.begin(), outputs.end());
    if (outputs.empty()) {
        std::fprintf(stderr, "martini: no output files were written to %s\n", outDir.c_str());
    } else {
        std::fprintf(stderr, "martini: outputs in %s:\n", outDir.c_str());
        for (const auto &[path, size] : outputs) {
            std::fprintf(stderr, "  %-40s %10ju bytes\n", fs::path(path).filename().c_str(), size);
        }
    }
    if (code != 0) std::fprintf(stderr, "martini: the program exited with status %d\n", code);
    return code;
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

int Run(int argc, char **argv) {
    std::vector<martini::core::ClientSpec> specs;
    std::string output = "martini-out";
    int i = 2;
    for (; i < argc; ++i) {
        const std::string arg = argv[i];
        std::string value, error;
        if (arg == "--") {
            ++i;
            break;
        }
        if (IsHelp(arg)) {
            std::fputs(kRunUsage, stdout);
            return 0;
        }
        if (TakeValue(argc, argv, i, "--client", value, error)) {
            if (!error.empty()) return Fail("run: " + error);
            if (std::string e = martini::core::ParseClientList(value, specs); !e.empty()) return Fail("run: " + e);
        } else if (TakeValue(argc, argv, i, "--output", value, error)) {
            if (!error.empty()) return Fail("run: " + error);
            if (value.empty()) return Fail("run: --output needs a directory");
            output = value;
        } else if (!arg.empty() && arg[0] == '-') {
            std::fprintf(stderr, "martini: run: unknown option '%s'\n%s", arg.c_str(), kRunUsage);
            return 1;
        } else {
            break;  // the program, without "--"
        }
    }
    if (i >= argc) {
        std::fprintf(stderr, "martini: run: no program given\n%s", kRunUsage);
        return 1;
    }
    std::vector<std::string> program(argv + i, argv + argc);
    // A Lua script runs under martini-lua in place of lua, which need not be installed.
    const bool lua = IsLua(fs::path(program[0]).filename().string());
    const std::string programPath = lua ? program[0] : FindProgram(program[0]);
    if (programPath.empty()) return Fail("run: program not found: '" + program[0] + "' (not an executable file, nor in $PATH)");
    const std::string base = fs::path(programPath).filename().string();
    if (base == "mono") return Fail("run: this Martini has no Mono provider yet; it profiles java and lua programs");
    if (base != "java" && !lua) {
        return Fail("run: cannot profile '" + program[0] +
                    "': martini run starts java programs (java ARGS...) and Lua scripts (lua SCRIPT ARGS...)");
    }
    if (specs.empty()) specs.push_back({"cgprof", "", ""});

    // Everything is checked before the program starts.
    const auto dirs = martini::core::ClientSearchDirs(ExecutableDir());
    for (auto &spec : specs) {
        if (std::string e = martini::core::ResolveClientPath(spec, dirs); !e.empty()) return Fail("run: " + e);
        spec.path = fs::weakly_canonical(spec.path).string();
    }
    std::vector<std::string> looked;
    const std::string runtime = lua ? FindLuaHost(looked) : FindAgent(looked);
    if (runtime.empty()) {
        return Fail(std::string("run: ") + (lua ? "martini-lua" : "the JVMTI agent libmartini-jvmti.so") +
                    " was not found (looked at " + Join(looked, ", ") + ")");
    }
    if (lua && (program.size() < 2 || program[1].empty() || program[1][0] == '-')) {
        return Fail("run: give the Lua script to profile (lua SCRIPT ARGS...); lua's own options are not supported");
    }
    std::error_code ec;
    fs::create_directories(output, ec);
    if (ec) return Fail("run: cannot create the output directory '" + output + "': " + ec.message());
    const std::string outDir = fs::weakly_canonical(fs::absolute(output)).string();

    if (lua) {
        // martini-lua is Lua with the interpreter C ABI built in: it replaces lua.
        std::vector<std::string> args{runtime};
        for (const auto &s : specs) {
            args.push_back("--client");
            args.push_back(ClientArgument(s));
        }
        args.push_back("--output");
        args.push_back(outDir);
        args.push_back("--");
        args.insert(args.end(), program.begin() + 1, program.end());
        return Launch(runtime, args, specs, outDir);
    }
    const std::string &agent = runtime;

    // The agent's configuration: clients by resolved path, and the output directory.
    char configPath[] = "/tmp/martini-run-XXXXXX";
    const int fd = ::mkstemp(configPath);
    if (fd < 0) return Fail(std::string("run: cannot write the agent's configuration: ") + std::strerror(errno));
    const std::string text = martini::core::ClientConfigJson({specs, outDir});
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!written) {
        ::unlink(configPath);
        return Fail("run: cannot write the agent's configuration");
    }

    std::vector<std::string> args;
    args.push_back(program[0]);
    args.push_back("-agentpath:" + agent + "=@" + configPath);
    args.insert(args.end(), program.begin() + 1, program.end());
    const int code = Launch(programPath, args, specs, outDir);
    ::unlink(configPath);
    return code;
}

int Report(int argc, char **argv) {
    std::string file, thread, metric;
    std::size_t top = 20;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        std::string value, error;
        if (IsHelp(arg)) {
            std::fputs(kReportUsage, stdout);
            return 0;
        }
        if (TakeValue(argc, argv, i, "--top", value, error)) {
            if (!error.empty()) return Fail("report: " + error);
            char *end = nullptr;
            top = std::strtoul(value.c_str(), &end, 10);
            if (value.empty() || *end != '\0') return Fail("report: --top: '" + value + "' is not a number");
        } else if (TakeValue(argc, argv, i, "--thread", value, error)) {
            if (!error.empty()) return Fail("report: " + error);
            thread = value;
        } else if (TakeValue(argc, argv, i, "--metric", value, error)) {
            if (!error.empty()) return Fail("report: " + error);
            metric = value;
        } else if (!arg.empty() && arg[0] == '-') {
            std::fprintf(stderr, "martini: report: unknown option '%s'\n%s", arg.c_str(), kReportUsage);
            return 1;
        } else if (file.empty()) {
            file = arg;
        } else {
            return Fail("report: one profile at a time ('" + file + "' and '" + arg + "')");
        }
    }
    if (file.empty()) {
        std::fprintf(stderr, "martini: report: no profile given\n%s", kReportUsage);
        return 1;
    }
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
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        std::string value, error;
        if (IsHelp(arg)) {
            std::fputs(kConvertUsage, stdout);
            return 0;
        }
        if (TakeValue(argc, argv, i, "--to", value, error)) {
            if (!error.empty()) return Fail("convert: " + error);
            to = value;
        } else if (TakeValue(argc, argv, i, "-o", value, error) || TakeValue(argc, argv, i, "--output", value, error)) {
            if (!error.empty()) return Fail("convert: " + error);
            out = value;
        } else if (!arg.empty() && arg[0] == '-') {
            std::fprintf(stderr, "martini: convert: unknown option '%s'\n%s", arg.c_str(), kConvertUsage);
            return 1;
        } else if (file.empty()) {
            file = arg;
        } else {
            return Fail("convert: one profile at a time ('" + file + "' and '" + arg + "')");
        }
    }
    if (file.empty() || to.empty()) {
        std::fprintf(stderr, "martini: convert: %s\n%s", file.empty() ? "no profile given" : "no --to FORMAT given", kConvertUsage);
        return 1;
    }
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
    for (int i = 2; i < argc; ++i) {
        if (IsHelp(argv[i])) {
            std::fputs(kControlUsage, stdout);
            return 0;
        }
        args.push_back(argv[i]);
    }
    if (args.size() != 2) {
        std::fprintf(stderr, "martini: control: expected a process id and a command\n%s", kControlUsage);
        return 1;
    }
    char *end = nullptr;
    const long pid = std::strtol(args[0].c_str(), &end, 10);
    if (args[0].empty() || *end != '\0' || pid <= 0) return Fail("control: '" + args[0] + "' is not a process id");
    const std::string &command = args[1];
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
    if (IsHelp(command) || command == "help") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    if (command == "run") return Run(argc, argv);
    if (command == "report") return Report(argc, argv);
    if (command == "convert") return Convert(argc, argv);
    if (command == "replay") return martini::tools::ReplayMain(argc - 1, argv + 1);
    if (command == "control") return Control(argc, argv);
    std::fprintf(stderr, "martini: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 1;
}
