// callcount: counts calls and exceptional exits per method and prints a table at VM
// shutdown. Written against the MPI client API only, so it runs unchanged on every
// runtime with a provider (and under martini-replay).
//
// Options (comma-separated key=value): top=N (rows, default 20), out=FILE (write the
// table there instead of stderr; %p: the process id, %t: the start time), include=PREFIX (only classes whose name starts with
// PREFIX, e.g. include=com.acme.; repeatable), time (also inclusive wall time per
// method, from DR_CPU_TIMESTAMP at enter and leave), counters (the calls from the
// runtime's coverage counters, IMpi::RequestCoverage: no event per call, so the cost is
// coverage's; no threads and no exceptional exits). An unknown key or a bad value
// refuses to start.
#include <MpiAPI.h>

#include "martini/clients/coverage_reads.h"
#include "martini/clients/expand.h"
#include "martini/clients/names.h"
#include "martini/clients/option_names.h"
#include "martini/clients/output_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using namespace Martini::MPI;

namespace {

struct Counts {
    std::uint64_t calls = 0;
    std::uint64_t exceptionExits = 0;
    std::uint64_t inclusiveNs = 0;
};

bool g_time = false;
bool g_counters = false;
BitSet g_coverageItems = DR_COVERAGE_BLOCKS;  // what the counters mode asked for (RequestCoverage)

// One table per OS thread: no lock per event. Each is registered once, on the
// thread's first event. Runtime threads (DR_THREAD_ID) are counted separately: a
// runtime may run several of them on one OS thread (martini-replay does).
struct CallTable {
    std::unordered_map<TId, Counts> methods;
    std::unordered_set<TId> runtimeThreads;
    // time mode: enter timestamps per runtime thread (several may share an OS thread)
    std::unordered_map<TId, std::vector<std::uint64_t>> starts;
};

class CallTables {
public:
    CallTable &ForThisThread() {
        thread_local CallTable *table = nullptr;
        if (table == nullptr) {
            std::lock_guard lock(mutex_);
            tables_.push_back(std::make_unique<CallTable>());
            table = tables_.back().get();
        }
        return *table;
    }
    std::unordered_map<TId, Counts> Merge(std::size_t &threads) {
        std::lock_guard lock(mutex_);
        std::unordered_map<TId, Counts> all;
        std::unordered_set<TId> runtimeThreads;
        for (const auto &t : tables_) {
            runtimeThreads.insert(t->runtimeThreads.begin(), t->runtimeThreads.end());
            for (const auto &[id, c] : t->methods) {
                all[id].calls += c.calls;
                all[id].exceptionExits += c.exceptionExits;
                all[id].inclusiveNs += c.inclusiveNs;
            }
        }
        threads = runtimeThreads.size();
        return all;
    }

private:
    std::mutex mutex_;
    std::vector<std::unique_ptr<CallTable>> tables_;
};

IMpi *g_mpi = nullptr;
TId g_clientId = 0;
CallTables g_tables;
std::size_t g_top = 20;
std::string g_outPath;
std::vector<std::string> g_includes;

// Asked once per method when the runtime instruments it, never per call.
class IncludeFilter : public ICallGraphFilter {
public:
    bool ShouldNotify(SCallGraphFilterData &data) override {
        for (const auto &prefix : g_includes) {
            if (std::strncmp(data.szClassName, prefix.c_str(), prefix.size()) == 0) return true;
        }
        return false;
    }
};

class EnterObserver : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | DR_THREAD_ID | (g_time ? DR_CPU_TIMESTAMP : 0); }
    void HandleEvent(SMethodEnterEventData &data) override {
        CallTable &table = g_tables.ForThisThread();
        ++table.methods[data.methodId].calls;
        if (data.validData & DR_THREAD_ID) table.runtimeThreads.insert(data.threadId);
        if (data.validData & DR_CPU_TIMESTAMP) table.starts[data.threadId].push_back(data.uiCpuTimestamp);
    }
};

class LeaveObserver : public IMethodLeaveEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | (g_time ? DR_CPU_TIMESTAMP | DR_THREAD_ID : 0); }
    void HandleEvent(SMethodLeaveEventData &data) override {
        CallTable &table = g_tables.ForThisThread();
        Counts &c = table.methods[data.methodId];
        if (data.bIsExceptionExit) ++c.exceptionExits;
        if ((data.validData & (DR_CPU_TIMESTAMP | DR_THREAD_ID)) == (DR_CPU_TIMESTAMP | DR_THREAD_ID)) {
            auto &starts = table.starts[data.threadId];
            if (!starts.empty()) {
                c.inclusiveNs += data.uiCpuTimestamp - starts.back();
                starts.pop_back();
            }
        }
    }
};

// "pkg.Class.method(sig)" through GetMethodInfo, growing the buffers when Martini
// says they are too short.
std::string MethodName(TId methodId) {
    const auto n = martini::clients::GetMethodNames(*g_mpi, g_clientId, methodId);
    if (!n.ok) return "method#" + std::to_string(methodId);
    return (n.className.empty() ? "" : n.className + ".") + n.method + n.signature;
}

// The counters mode: each covered method's calls from its entry counter (CEK_ENTRY),
// else from its first block's.
std::unordered_map<TId, Counts> CountsFromCounters() {
    std::unordered_map<TId, Counts> counts;
    for (TId id : martini::clients::GetCoveredMethods(*g_mpi, g_clientId)) {
        BitSet valid = 0;
        const auto entries = martini::clients::GetCoverageEntries(*g_mpi, g_clientId, id, g_coverageItems, valid);
        const std::uint64_t calls = martini::clients::CallsOf(entries);
        if (calls != 0) counts[id].calls = calls;
    }
    return counts;
}

class ShutdownObserver : public IVmShutdownEventObserver {
public:
    void HandleEvent() override {
        std::size_t threads = 0;
        const auto counts = g_counters ? CountsFromCounters() : g_tables.Merge(threads);
        std::vector<std::pair<TId, Counts>> rows(counts.begin(), counts.end());
        std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
            return a.second.calls != b.second.calls ? a.second.calls > b.second.calls : a.first < b.first;
        });
        std::uint64_t calls = 0, exits = 0;
        for (const auto &[id, c] : rows) {
            calls += c.calls;
            exits += c.exceptionExits;
        }
        auto print = [&](FILE *out) {
            if (g_counters) {
                std::fprintf(out, "callcount: %llu calls to %zu methods (from the coverage counters: no threads, no "
                                  "exceptional exits)\n", (unsigned long long)calls, rows.size());
            } else {
                std::fprintf(out, "callcount: %llu calls to %zu methods on %zu threads (%llu exceptional exits)\n",
                             (unsigned long long)calls, rows.size(), threads, (unsigned long long)exits);
            }
            if (g_time) {
                std::fprintf(out, "%12s %8s %12s  %s\n", "calls", "exc.exit", "incl.ms", "method");
            } else {
                std::fprintf(out, "%12s %8s  %s\n", "calls", "exc.exit", "method");
            }
            for (std::size_t i = 0; i < rows.size() && i < g_top; ++i) {
                if (g_time) {
                    std::fprintf(out, "%12llu %8llu %12.3f  %s\n", (unsigned long long)rows[i].second.calls,
                                 (unsigned long long)rows[i].second.exceptionExits,
                                 double(rows[i].second.inclusiveNs) / 1e6, MethodName(rows[i].first).c_str());
                } else if (g_counters) {  // exceptional exits are not counted
                    std::fprintf(out, "%12llu %8s  %s\n", (unsigned long long)rows[i].second.calls, "-",
                                 MethodName(rows[i].first).c_str());
                } else {
                    std::fprintf(out, "%12llu %8llu  %s\n", (unsigned long long)rows[i].second.calls,
                                 (unsigned long long)rows[i].second.exceptionExits, MethodName(rows[i].first).c_str());
                }
            }
            if (rows.size() > g_top) std::fprintf(out, "%12s %8s  (%zu more methods)\n", "", "", rows.size() - g_top);
        };
        if (g_outPath.empty()) {
            print(stderr);
            return;
        }
        // out=FILE: complete or not there at all (a full disk is named, not a 0-byte file).
        const std::string path = martini::clients::ExpandOutputName(g_outPath);
        if (std::string e = martini::clients::WriteFileAtomically(path, std::function<void(FILE *)>(print)); !e.empty()) {
            std::fprintf(stderr, "callcount: %s; printing here instead\n", e.c_str());
            print(stderr);
        }
    }
};

EnterObserver g_enter;
LeaveObserver g_leave;
ShutdownObserver g_shutdown;
IncludeFilter g_filter;

// The counters mode's filter: the same classes as the call-graph filter.
class CoverageIncludeFilter : public ICoverageFilter {
public:
    bool ShouldNotify(SCoverageFilterData &data) override {
        SCallGraphFilterData d{data.szClassName, data.szMethodName, data.szMethodSignature, MAT_NONE};
        return g_filter.ShouldNotify(d);
    }
};
CoverageIncludeFilter g_coverageFilter;

// The options, checked all before any is used (MPICL_CheckOptions checks them alone).
struct Options {
    std::size_t top = 20;
    bool time = false;
    bool counters = false;
    std::vector<std::string> includes;
    std::string outPath;
};

// Every option's name (docs/configuration.md lists them): a name that is none of them
// is refused, with the nearest one.
constexpr const char *kOptionNames[] = {"top", "out", "include", "time", "counters"};

// Fills `o` from the option text; "" or the problem.
std::string ParseOptions(const char *text, Options &o) {
    std::vector<martini::clients::Option> items;
    if (std::string e = martini::clients::SplitOptions(text, items); !e.empty()) return e;
    for (const auto &it : items) {
        const std::string &key = it.key, &value = it.value;
        if (key == "sample" || key == "wall") {
            return "cannot use samples (SampleHit): it counts every call exactly; cgprof=sample samples";
        }
        if (std::string e = martini::clients::CheckOptionName(key, kOptionNames); !e.empty()) return e;
        if (key == "top") {
            char *endp = nullptr;
            const unsigned long n = std::strtoul(value.c_str(), &endp, 10);
            if (value.empty() || value[0] < '0' || value[0] > '9' || *endp != '\0' || n == 0) {
                return "option top=" + value + ": expected a positive number";
            }
            o.top = n;
        } else if (key == "time") {
            if (!value.empty()) return "option 'time' takes no value";
            o.time = true;
        } else if (key == "counters") {
            if (!value.empty()) return "option 'counters' takes no value";
            o.counters = true;
        } else if (key == "include") {
            if (value.empty()) return "option include= needs a class-name prefix";
            o.includes.push_back(value);
        } else if (key == "out") {
            if (value.empty()) return "option out= needs a file name";
            o.outPath = value;
        } else {
            return "option '" + key + "' is known but not handled";
        }
    }
    if (o.counters && o.time) return "options 'counters' and 'time' exclude each other: the counters have no times";
    return "";
}

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *pMpiApi, TId clientId, const char *szOptions) {
    Options o;
    if (std::string e = ParseOptions(szOptions, o); !e.empty()) {
        std::fprintf(stderr, "callcount: %s\n", e.c_str());
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    g_top = o.top;
    g_time = o.time;
    g_includes = std::move(o.includes);
    g_outPath = std::move(o.outPath);
    g_counters = o.counters;
    g_mpi = pMpiApi;
    g_clientId = clientId;
    if (g_counters) {
        // The calls alone where the runtime counts them apart (one add per call), else
        // from the blocks' counters.
        g_coverageItems = DR_COVERAGE_CALLS;
        TResult r = pMpiApi->RequestCoverage(clientId, g_coverageItems);
        if (r == MRTE_ERROR_NOT_SUPPORTED) {
            g_coverageItems = DR_COVERAGE_BLOCKS;
            r = pMpiApi->RequestCoverage(clientId, g_coverageItems);
        }
        if (r == MRTE_ERROR_NOT_SUPPORTED) {
            std::fprintf(stderr, "callcount: option 'counters': this runtime keeps no coverage counters\n");
            return r;
        }
        if (r == MRTE_RESULT_OK) r = pMpiApi->RegisterEvent(clientId, g_shutdown);
        if (r == MRTE_RESULT_OK && !g_includes.empty()) {
            r = pMpiApi->SetEventGroupFilter(clientId, EG_COVERAGE, g_coverageFilter);
        }
        return r;
    }
    TResult r = pMpiApi->RegisterEvent(clientId, g_enter);
    if (r == MRTE_RESULT_OK) r = pMpiApi->RegisterEvent(clientId, g_leave);
    if (r == MRTE_RESULT_OK) r = pMpiApi->RegisterEvent(clientId, g_shutdown);
    if (r == MRTE_RESULT_OK && !g_includes.empty()) r = pMpiApi->SetEventGroupFilter(clientId, EG_CALL_GRAPH, g_filter);
    return r;
}

// For `martini run` and `martini attach`: the options checked before the program starts
// (martini/clients/option_names.h).
extern "C" API_EXPORT const char *MPICL_CheckOptions(const char *options) {
    return martini::clients::CheckOptions<Options>(options, ParseOptions);
}
