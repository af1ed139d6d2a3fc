// coverage: line, branch and function coverage of the program's own code, counted
// inside the runtime (IMpi::RequestCoverage: no event per block) and read when the run
// ends, at a sample point (`martini control PID sample NAME`) or at detach. Writes an
// lcov tracefile (coverage.info), Cobertura XML (coverage.xml) and one HTML page
// (coverage.html), and prints a per-file summary. Written against the MPI client API
// only, so it runs unchanged on every runtime that counts blocks.
//
// Options (comma-separated): include=PREFIX, exclude=PREFIX (class-name prefixes,
// repeatable), all (the runtime's own library too), formats=lcov+xml+html (or none),
// sources=DIR[:DIR...] (where the source files are; default: the working directory),
// out=FILE (the tracefile's path; %p: the process id), top=N (files in the summary).
#include <MpiAPI.h>

#include "coverage_options.h"
#include "martini/clients/control.h"
#include "martini/clients/coverage_reads.h"
#include "martini/clients/expand.h"
#include "martini/clients/names.h"
#include "martini/clients/output_file.h"
#include "martini/coverage/tracefile.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

using namespace Martini::MPI;
namespace cov = martini::coverage;

namespace {

IMpi *g_mpi = nullptr;
TId g_clientId = 0;
ERuntimeType g_runtime = RT_UNKNOWN;
martini::coverage_client::Options g_options;
martini::clients::OutputDirectory g_outputDir;
std::mutex g_writeMutex;  // one report at a time (a sample point racing the end)

// Asked once per method when the runtime instruments it, never per block.
class Filter : public ICoverageFilter {
public:
    bool ShouldNotify(SCoverageFilterData &d) override {
        const bool noSource = d.szSourceFileName == nullptr || d.szSourceFileName[0] == '\0';
        const std::string cls = d.szClassName ? d.szClassName : "";
        // An interpreter's methods without a source are its builtins (Lua's C functions).
        if (noSource && g_runtime == RT_INTERPRETER && !g_options.all) return false;
        // Mono's framework assemblies come without symbols, and mscorlib has classes in
        // no namespace (SR, Locale): without a source, only what an include= names.
        if (noSource && g_runtime == RT_MONO && !g_options.all && !g_options.Includes(cls)) return false;
        return g_options.Wants(cls, g_runtime);
    }
};

// The file a method's source is in: the runtime's name for it, under its package's
// directory on the JVM (Foo.java of com.acme.Foo is com/acme/Foo.java), found under
// sources= when it can be (then absolute).
std::string SourcePath(const martini::clients::MethodNames &n) {
    std::string path = n.sourceFile;
    if (g_runtime == RT_JVM) {
        const auto dot = n.className.rfind('.');
        std::string dir = dot == std::string::npos ? "" : n.className.substr(0, dot);
        for (char &c : dir) c = c == '.' ? '/' : c;
        if (path.empty()) {  // no SourceFile attribute (javac -g:none)
            std::string outer = n.className.substr(dot == std::string::npos ? 0 : dot + 1);
            path = outer.substr(0, outer.find('$')) + ".java";
        }
        if (!dir.empty() && path.find('/') == std::string::npos) path = dir + "/" + path;
    }
    if (path.empty()) path = "(no source) " + n.className;
    return g_options.Resolve(path);
}

// Adds one method's counts to its file: a line's count is the most times any of its
// blocks was entered (a line of several blocks, `if (a) return;`, is entered as often
// as its first), summed over the methods on the line.
void AddMethod(cov::Tracefile &t, TId method, std::size_t &withoutLines) {
    const auto names = martini::clients::GetMethodNames(*g_mpi, g_clientId, method);
    if (!names.ok) return;
    BitSet valid = 0;
    const auto entries = martini::clients::GetCoverageEntries(*g_mpi, g_clientId, method,
                                                              DR_COVERAGE_BLOCKS | DR_COVERAGE_BRANCHES, valid);
    if (entries.empty()) return;
    cov::File &file = t.files[SourcePath(names)];
    std::map<unsigned, std::uint64_t> lines;
    unsigned firstLine = 0;
    const std::uint64_t calls = martini::clients::CallsOf(entries);
    std::uint64_t blocks = 0, blocksHit = 0;
    for (const auto &e : entries) {
        if (e.kind != CEK_BLOCK) continue;
        ++blocks;
        blocksHit += e.uiCount != 0;
        if (e.uiLineNumber == 0) continue;
        if (firstLine == 0 || e.uiLineNumber < firstLine) firstLine = e.uiLineNumber;
        lines[e.uiLineNumber] = std::max(lines[e.uiLineNumber], e.uiCount);
    }
    const std::string name = (names.className.empty() ? "" : names.className + ".") + names.method + names.signature;
    if (firstLine == 0) {  // no line table: counted by block only
        ++withoutLines;
        file.notes.push_back(name + ": no line table (compiled without line numbers): " + std::to_string(blocksHit) +
                             " of " + std::to_string(blocks) + " blocks ran");
        return;
    }
    for (const auto &[line, n] : lines) file.lines[line] += n;
    cov::Function &fn = file.functions[name];
    fn.line = firstLine;
    fn.count += calls;
    for (const auto &e : entries) {
        if (e.kind != CEK_BRANCH || e.uiLineNumber == 0) continue;
        auto &taken = file.branches[{e.uiLineNumber, e.uiOffset, e.uiOutcome}];
        taken = taken.value_or(0) + e.uiCount;
    }
}

cov::Tracefile Collect(std::size_t &methods, std::size_t &withoutLines) {
    cov::Tracefile t;
    const auto ids = martini::clients::GetCoveredMethods(*g_mpi, g_clientId);
    methods = ids.size();
    for (TId id : ids) AddMethod(t, id, withoutLines);
    return t;
}

// Writes `text` to `path`, complete or not at all; says which on stderr.
bool WriteOne(const std::string &path, const std::function<void(std::ostream &)> &fill) {
    const std::string e = martini::clients::WriteFileAtomically(path, fill);
    if (e.empty()) {
        std::fprintf(stderr, "coverage: wrote %s\n", path.c_str());
        return true;
    }
    std::fprintf(stderr, "coverage: %s; the partial file was removed\n", e.c_str());
    return false;
}

// The report: the tracefile, Cobertura XML and HTML as asked, and the summary.
void Report(const std::string &label) {
    std::lock_guard lock(g_writeMutex);
    std::size_t methods = 0, withoutLines = 0;
    const cov::Tracefile t = Collect(methods, withoutLines);
    std::ostringstream summary;
    cov::WriteSummary(t, summary, label.empty() ? g_options.top : 0);
    std::fprintf(stderr, "%s", summary.str().c_str());
    if (withoutLines != 0) {
        std::fprintf(stderr, "coverage: %zu of %zu methods have no line table: counted by block only (see the HTML)\n",
                     withoutLines, methods);
    }
    std::string dir = g_outputDir.Resolve({});
    std::string base = "coverage" + (label.empty() ? "" : "-" + label);
    std::string lcovPath;
    if (!g_options.outPath.empty()) {
        lcovPath = martini::clients::ExpandOutputName(g_options.outPath);
        if (!label.empty()) {  // run.info -> run-LABEL.info
            const auto dot = lcovPath.rfind('.');
            const auto slash = lcovPath.rfind('/');
            const bool hasExtension = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
            lcovPath.insert(hasExtension ? dot : lcovPath.size(), "-" + label);
        }
        if (dir.empty()) {  // the other formats beside it
            const auto slash = lcovPath.rfind('/');
            dir = slash == std::string::npos ? "." : lcovPath.substr(0, slash);
        }
    }
    if (dir.empty()) dir = ".";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string prefix = dir + "/" + base;
    if (lcovPath.empty()) lcovPath = prefix + ".info";
    using namespace martini::coverage_client;
    if (g_options.formats & kLcov) WriteOne(lcovPath, [&](std::ostream &o) { cov::WriteLcov(t, o); });
    if (g_options.formats & kCobertura) {
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch());
        WriteOne(prefix + ".xml", [&](std::ostream &o) { cov::WriteCobertura(t, o, now.count()); });
    }
    if (g_options.formats & kHtml) {
        WriteOne(prefix + ".html", [&](std::ostream &o) { cov::WriteHtml(t, o, cov::ReadSourceFile); });
    }
}

class ShutdownObserver : public IVmShutdownEventObserver {
public:
    void HandleEvent() override { Report(""); }
};

class CommandObserver : public IEcCustomCommandEventObserver {
public:
    BitSet EventDataTypes() override { return DR_COMMAND; }
    void HandleEvent(SEcCustomCommandEventData &d) override {
        martini::clients::HandleControlCommand(
            d, [](const std::string &label) { Report(label); },
            [](const std::string &label) { martini::clients::IntervalNotKept("coverage", label); }, [](TId, bool) {});
    }
};

Filter g_filter;
ShutdownObserver g_shutdown;
CommandObserver g_command;
martini::clients::OutputDirObserver g_outputDirObserver(g_outputDir);

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *pMpiApi, TId clientId, const char *szOptions) {
    using namespace martini::coverage_client;
    Options o;
    if (std::string e = ParseOptions(szOptions, o); !e.empty()) {
        std::fprintf(stderr, "coverage: %s\n", e.c_str());
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    g_options = std::move(o);
    g_mpi = pMpiApi;
    g_clientId = clientId;
    SRuntimeInfo info;
    if (pMpiApi->GetRuntimeInfo(clientId, &info) == MRTE_RESULT_OK) g_runtime = info.runtimeType;
    TResult r = pMpiApi->RequestCoverage(clientId, DR_COVERAGE_BLOCKS | DR_COVERAGE_BRANCHES);
    if (r == MRTE_ERROR_NOT_SUPPORTED) {
        std::fprintf(stderr, "coverage: this runtime (%s) cannot count blocks: no coverage\n", info.szRuntimeName);
        return r;
    }
    if (r == MRTE_RESULT_OK) r = pMpiApi->SetEventGroupFilter(clientId, EG_COVERAGE, g_filter);
    if (r == MRTE_RESULT_OK) r = pMpiApi->RegisterEvent(clientId, g_shutdown);
    if (r == MRTE_RESULT_OK) r = pMpiApi->RegisterEvent(clientId, g_outputDirObserver);
    if (r == MRTE_RESULT_OK) pMpiApi->RegisterEvent(clientId, g_command);  // optional: sample points
    return r;
}

extern "C" API_EXPORT const char *MPICL_CheckOptions(const char *options) {
    using namespace martini::coverage_client;
    return martini::clients::CheckOptions<Options>(options, ParseOptions);
}
