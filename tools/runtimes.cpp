// The runtimes `martini run` starts programs under: see runtimes.h. One recipe each:
//   java  under the JVMTI agent (-agentpath:AGENT=@config.json);
//   mono  under the Mono profiler module (--profile=martini:@config.json, the module's
//         directory in LD_LIBRARY_PATH), with --debug for line numbers and -O=-aot when
//         a client may want calls (AOT-compiled code raises no call events; --keep-aot
//         keeps it);
//   lua   a Lua 5.4 script under martini-lua, Lua with the interpreter C ABI built in,
//         which replaces lua;
//   any other command (ant, gradle, mvn, a project's run.sh): the JVMs and Mono runtimes
//         it starts take the agent from JAVA_TOOL_OPTIONS and the module from
//         MONO_ENV_OPTIONS, each process writing to DIR/<its pid>.
#include "runtimes.h"

#include "martini/core/status.h"
#include "common.h"
#include "tools.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

// The installed libdir relative to the installed bindir ("../lib/x86_64-linux-gnu"),
// from Meson (tools/meson.build); a build without it assumes the plain layout.
#ifndef MARTINI_BINDIR_TO_LIBDIR
#define MARTINI_BINDIR_TO_LIBDIR "../lib"
#endif

namespace martini::tools {
namespace {

std::string FindMonoModule(std::vector<std::string> &looked);

// A library of Martini's: $`variable` when set (when `byName`, the runtime finds it by
// its file name, which must then be `file`), else installed in <libdir>/martini (the
// libdir Martini was configured with, found from <bindir>), else in the build tree at
// `buildPath`.
std::string FindLibrary(const char *variable, const std::string &file, const std::string &buildPath, bool byName,
                        std::vector<std::string> &looked) {
    if (const char *env = std::getenv(variable)) {
        looked.push_back(env);
        return ::access(env, R_OK) == 0 && (!byName || fs::path(env).filename() == file) ? env : "";
    }
    const std::string exe = ExecutableDir();
    for (const std::string &candidate : {exe + "/" MARTINI_BINDIR_TO_LIBDIR "/martini/" + file, exe + "/../" + buildPath}) {
        looked.push_back(candidate);
        if (::access(candidate.c_str(), R_OK) == 0) return fs::weakly_canonical(candidate).string();
    }
    return "";
}

// The Mono profiler module libmono-profiler-martini.so: $MARTINI_MONO_MODULE, then the
// installation (<libdir>/martini) and the build tree. Mono finds it by its directory
// in LD_LIBRARY_PATH (it takes no path in --profile=).
std::string FindMonoModule(std::vector<std::string> &looked) {
    return FindLibrary("MARTINI_MONO_MODULE", "libmono-profiler-martini.so",
                       "providers/mono/libmono-profiler-martini.so", true, looked);
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

// The provider's configuration (clients by resolved path, and the output directory),
// next to the status file, in martini's temporary directory: its path in `path`; ""
// or why it could not be written (`whose`: "agent's", "module's").
std::string WriteConfig(const RunRequest &request, const std::string &outDir, const std::string &whose,
                        std::string &path) {
    path = fs::path(std::getenv(core::kStatusFileVariable)).parent_path() / "config.json";
    const std::string text = core::ClientConfigJson({request.specs, outDir});
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return "cannot write the " + whose + " configuration: " + std::strerror(errno);
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!written) return "cannot write the " + whose + " configuration";
    return "";
}

// The program's arguments after its name.
void AppendArguments(const RunRequest &request, Command &command) {
    command.args.insert(command.args.end(), request.program.begin() + 1, request.program.end());
}

std::string JavaCommand(const std::string &agent, const RunRequest &request, const std::string &outDir,
                        Command &command) {
    std::string configPath;
    if (std::string e = WriteConfig(request, outDir, "agent's", configPath); !e.empty()) return e;
    command.path = request.programPath;
    command.args = {request.program[0], "-agentpath:" + agent + "=@" + configPath};
    AppendArguments(request, command);
    return "";
}

// Clients that observe no call events, so that Mono may keep its AOT code: the bundled
// ones known not to (cgprof in sample mode takes SampleHit). Any other client may.
bool WantsNoCalls(const core::ClientSpec &s) {
    if (s.name == "heapprof" || s.name == "threadprof") return true;
    if (s.name == "cgprof") {
        std::stringstream in(s.options);
        for (std::string o; std::getline(in, o, ',');) {
            if (o == "sample" || o.rfind("sample=", 0) == 0) return true;
        }
    }
    return false;
}

// Mono looks the module up by name: its directory goes first in LD_LIBRARY_PATH
// (inherited by the program). Mono says nothing when it cannot load it; the run status
// handshake tells (no line: the module never started).
std::vector<std::pair<std::string, std::string>> MonoEnvironment(const std::string &module, const RunRequest &) {
    const std::string dir = fs::path(module).parent_path().string();
    const char *old = std::getenv("LD_LIBRARY_PATH");
    return {{"LD_LIBRARY_PATH", old != nullptr && *old != '\0' ? dir + ":" + old : dir}};
}

std::string MonoCommand(const std::string &, const RunRequest &request, const std::string &outDir, Command &command) {
    std::string configPath;
    if (std::string e = WriteConfig(request, outDir, "module's", configPath); !e.empty()) return e;
    const auto &program = request.program;
    const bool callsWanted = !std::all_of(request.specs.begin(), request.specs.end(), WantsNoCalls);
    command.path = request.programPath;
    command.args = {program[0]};
    // Line numbers need Mono's debug mode; a complete call graph needs JIT code.
    if (std::find(program.begin() + 1, program.end(), "--debug") == program.end()) command.args.push_back("--debug");
    if (callsWanted && !request.flags.count("--keep-aot")) command.args.push_back("-O=-aot");
    command.args.push_back("--profile=martini:@" + configPath);
    AppendArguments(request, command);
    return "";
}

std::string LuaCheck(const RunRequest &request) {
    const auto &program = request.program;
    if (program.size() < 2 || program[1].empty() || program[1][0] == '-') {
        return "give the Lua script to profile (lua SCRIPT ARGS...); lua's own options are not supported";
    }
    return "";
}

// A client for martini-lua's --client: path=options, with ';' and '\' escaped.
std::string ClientArgument(const core::ClientSpec &s) {
    std::string out = s.path;
    if (s.options.empty()) return out;
    out += '=';
    for (char c : s.options) {
        if (c == ';' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

// martini-lua is Lua with the interpreter C ABI built in: it replaces lua.
std::string LuaCommand(const std::string &host, const RunRequest &request, const std::string &outDir,
                       Command &command) {
    command.path = host;
    command.args = {host};
    for (const auto &s : request.specs) {
        command.args.push_back("--client");
        command.args.push_back(ClientArgument(s));
    }
    command.args.push_back("--output");
    command.args.push_back(outDir);
    command.args.push_back("--");
    AppendArguments(request, command);
    return "";
}

// A variable of the program's environment with `more` added after what it held.
std::string Appended(const char *variable, const std::string &more, const char *separator) {
    const char *old = std::getenv(variable);
    return std::string(variable) + "=" + (old != nullptr && *old != '\0' ? std::string(old) + separator + more : more);
}

// Any other command: its JVMs and Mono runtimes, each a process of its own, are given
// the configuration through the variables they read at start-up; each writes to
// DIR/<pid> (the clients expand %p in their own process).
std::string LauncherCommand(const std::string &agent, const RunRequest &request, const std::string &outDir,
                            Command &command) {
    std::string configPath;
    if (std::string e = WriteConfig(request, outDir + "/%p", "runtimes'", configPath); !e.empty()) return e;
    command.path = request.programPath;
    command.args = request.program;
    command.env.push_back(Appended("JAVA_TOOL_OPTIONS", "-agentpath:" + agent + "=@" + configPath, " "));
    std::vector<std::string> looked;
    if (const std::string module = FindMonoModule(looked); !module.empty()) {
        command.env.push_back(Appended("MONO_ENV_OPTIONS", "--debug --profile=martini:@" + configPath, " "));
        command.env.push_back(Appended("LD_LIBRARY_PATH", fs::path(module).parent_path().string(), ":"));
    }
    return "";
}

const RuntimeRecipe kLauncher = {
    .names = {},
    .starts = "any other command that starts JVMs or Mono (ant, gradle, mvn, a run.sh: each\n"
              "process writes to DIR/PID)",
    .host = "the JVMTI agent libmartini-jvmti.so",
    .provider = "no JVM or Mono runtime",
    .notStarted = "no JVM or Mono runtime started under the command (they take Martini from JAVA_TOOL_OPTIONS and "
                  "MONO_ENV_OPTIONS): the program ran without profiling",
    .readsJvmErrorLog = false,
    .find = FindJvmtiAgent,
    .command = LauncherCommand};

const RuntimeRecipe kRuntimes[] = {
    {.names = {"java"},
     .starts = "java programs (java ARGS...)",
     .host = "the JVMTI agent libmartini-jvmti.so",
     .provider = "the JVMTI agent",
     .readsJvmErrorLog = true,
     .controlChannel = true,
     .find = FindJvmtiAgent,
     .command = JavaCommand},
    {.names = {"mono", "mono-sgen"},
     .starts = "mono programs (mono PROGRAM.exe ARGS...)",
     .host = "the Mono profiler module libmono-profiler-martini.so",
     .provider = "the Mono profiler module",
     .flags = {{"--keep-aot",
                "mono: keep Mono's AOT-compiled code (faster start, but its methods raise\n"
                "no call events: the call graph misses them; the profiler says how many)"}},
     .find = FindMonoModule,
     .environment = MonoEnvironment,
     .command = MonoCommand},
    {.names = {"lua", "lua5.4", "lua54"},
     .starts = "Lua scripts (lua SCRIPT ARGS...)",
     .host = "martini-lua",
     .provider = "martini-lua",
     .replacesProgram = true,
     .controlChannel = true,
     .find = FindLuaHost,
     .check = LuaCheck,
     .command = LuaCommand},
};

}  // namespace

std::string FindJvmtiAgent(std::vector<std::string> &looked) {
    return FindLibrary("MARTINI_JVMTI_AGENT", "libmartini-jvmti.so", "providers/jvmti/libmartini-jvmti.so", false,
                       looked);
}

std::span<const RuntimeRecipe> Runtimes() { return kRuntimes; }

const RuntimeRecipe *RecipeFor(const std::string &baseName) {
    for (const RuntimeRecipe &recipe : kRuntimes) {
        if (std::find(recipe.names.begin(), recipe.names.end(), baseName) != recipe.names.end()) return &recipe;
    }
    return &kLauncher;
}

const RuntimeRecipe &Launcher() { return kLauncher; }

}  // namespace martini::tools
