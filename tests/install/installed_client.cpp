// A client built out of the tree against an installed Martini, with nothing but
// `pkg-config --cflags --libs martini-mpi martini-filters martini-report martini-clients`:
// one of each thing docs/client-guide.md offers client writers. It counts MethodEnter
// events of the methods its rule set (filter=) accepts, names them through data
// requests at VmShutdown and writes a report-library profile (JSON) to the directory
// from `out=` or EcSetOutputDirectory, as the bundled profilers do.
#include <MpiAPI.h>

#include "martini/clients/names.h"
#include "martini/clients/output.h"
#include "martini/filters/rule_set.h"
#include "martini/report/profile.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace Martini::MPI;
namespace report = martini::report;

namespace {

IMpi *g_mpi = nullptr;
TId g_clientId = 0;
std::mutex g_mutex;
std::map<TId, std::uint64_t> g_calls;  // method id -> MethodEnter events
martini::filters::RuleSet g_rules;
martini::clients::OutputOptions g_output;
martini::clients::OutputDirectory g_outputDirectory;
martini::clients::OutputDirObserver g_outputDirObserver(g_outputDirectory);

class EnterObserver : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID; }
    void HandleEvent(SMethodEnterEventData &data) override {
        if ((data.validData & DR_METHOD_ID) == 0) return;
        std::lock_guard lock(g_mutex);
        ++g_calls[data.methodId];
    }
};

class ShutdownObserver : public IVmShutdownEventObserver {
public:
    void HandleEvent() override {
        report::Profile p;
        p.tool = "installed_client";
        p.runtime = "replay";
        p.mode = "counts";
        p.metrics = {{"calls", "count"}};
        report::Tree &t = p.threads.emplace_back();
        t.threadId = 1;
        t.threadName = "all";
        t.Clear(p.metrics.size());
        std::lock_guard lock(g_mutex);
        for (const auto &[methodId, calls] : g_calls) {
            const auto names = martini::clients::GetMethodNames(*g_mpi, g_clientId, methodId);
            report::Frame &frame = p.frames.emplace_back();
            frame.name = names.className + "." + names.method;
            frame.className = names.className;
            frame.method = names.method;
            frame.signature = names.signature;
            const auto node = t.ChildOf(0, static_cast<std::uint32_t>(p.frames.size() - 1), p.metrics.size());
            t.nodes[node].self = {calls};
        }
        p.Merge();
        std::fprintf(stderr, "installed_client: %zu methods\n", g_calls.size());
        martini::clients::WriteOutputs(p, g_output, g_outputDirectory.Resolve(g_output));
    }
};

EnterObserver g_enter;
ShutdownObserver g_shutdown;

}  // namespace

// Options: filter=RULES (docs/filters.md), and the bundled profilers' out=, formats=,
// name=, top= (name defaults to "installed", formats to json).
extern "C" API_EXPORT TResult MPICL_Instantiate(IMpi *mpi, TId clientId, const char *options) {
    g_mpi = mpi;
    g_clientId = clientId;
    g_output.formats = report::kJson;
    g_output.name = "installed";
    std::vector<martini::clients::Option> parsed;
    std::string error = martini::clients::SplitOptions(options, parsed);
    std::string filter;
    for (const auto &o : parsed) {
        if (!error.empty()) break;
        if (o.key == "filter") filter = o.value;
        else if (!g_output.Parse(o.key, o.value, error)) error = "unknown option '" + o.key + "'";
    }
    if (!error.empty()) {
        std::fprintf(stderr, "installed_client: %s\n", error.c_str());
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    TResult res = martini::filters::Install(g_rules, filter, *mpi, clientId, EG_CALL_GRAPH, "installed_client");
    if (res == MRTE_RESULT_OK) res = mpi->RegisterEvent(clientId, g_enter);
    if (res == MRTE_RESULT_OK) res = mpi->RegisterEvent(clientId, g_shutdown);
    if (res == MRTE_RESULT_OK) res = mpi->RegisterEvent(clientId, g_outputDirObserver);
    return res;
}
