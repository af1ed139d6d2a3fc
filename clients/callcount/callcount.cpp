// callcount: counts calls and exceptional exits per method and prints a table at VM
// shutdown. Written against the MPI client API only, so it runs unchanged on every
// runtime with a provider (and under martini-replay).
//
// Options (comma-separated key=value): top=N (rows, default 20), out=FILE (write the
// table there instead of stderr; %p: the process id, %t: the start time), include=PREFIX (only classes whose name starts with
// PREFIX, e.g. include=com.acme.; repeatable), time (also inclusive wall time per
// method, from DR_CPU_TIMESTAMP at enter and leave). An unknown key or a bad value
// refuses to start.
#include <MpiAPI.h>

#include "martini/clients/expand.h"
#include "martini/clients/names.h"
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

class ShutdownObserver : public IVmShutdownEventObserver {
public:
    void HandleEvent() override {
        std::size_t threads = 0;
        const auto counts = g_tables.Merge(threads);
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
            std::fprintf(out, "callcount: %llu calls to %zu methods on %zu threads (%llu exceptional exits)\n",
                         (unsigned long long)calls, rows.size(), threads, (unsigned long long)exits);
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

bool ParseOptions(const char *text) {
    std::string s(text ? text : "");
    std::size_t pos = 0;
    while (pos < s.size()) {
        std::size_t end = s.find(',', pos);
        if (end == std::string::npos) end = s.size();
        const std::string item = s.substr(pos, end - pos);
        pos = end + 1;
        if (item.empty()) continue;
        const auto eq = item.find('=');
        const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
        if (key == "top") {
            char *endp = nullptr;
            const unsigned long n = std::strtoul(value.c_str(), &endp, 10);
            if (value.empty() || *endp != '\0' || n == 0) {
                std::fprintf(stderr, "callcount: option top=%s: expected a positive number\n", value.c_str());
                return false;
            }
            g_top = n;
        } else if (key == "time" && value.empty()) {
            g_time = true;
        } else if (key == "include") {
            if (value.empty()) {
                std::fprintf(stderr, "callcount: option include= needs a class-name prefix\n");
                return false;
            }
            g_includes.push_back(value);
        } else if (key == "out") {
            if (value.empty()) {
                std::fprintf(stderr, "callcount: option out= needs a file name\n");
                return false;
            }
            g_outPath = value;
        } else if (key == "sample" || key == "wall") {
            std::fprintf(stderr, "callcount: cannot use samples (SampleHit): it counts every call exactly; "
                                 "cgprof=sample samples\n");
            return false;
        } else {
            std::fprintf(stderr, "callcount: unknown option '%s' (known: top=N, out=FILE, include=PREFIX, time)\n",
                         key.c_str());
            return false;
        }
    }
    return true;
}

}  // namespace

extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *pMpiApi, TId clientId, const char *szOptions) {
    if (!ParseOptions(szOptions)) return MRTE_ERROR_ILLEGAL_ARGUMENT;
    g_mpi = pMpiApi;
    g_clientId = clientId;
    TResult r = pMpiApi->RegisterEvent(clientId, g_enter);
    if (r == MRTE_RESULT_OK) r = pMpiApi->RegisterEvent(clientId, g_leave);
    if (r == MRTE_RESULT_OK) r = pMpiApi->RegisterEvent(clientId, g_shutdown);
    if (r == MRTE_RESULT_OK && !g_includes.empty()) r = pMpiApi->SetEventGroupFilter(clientId, EG_CALL_GRAPH, g_filter);
    return r;
}
