// A rule set applied at class-load time: the cost per method of deciding whether a
// method is instrumented, alone and through the core (filter call + interest cache),
// over 10,000 methods with realistic names. This runs once per method when the
// runtime instruments it, never per call.
//
//   <build>/bench/filter_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include "martini/core/core.h"
#include "martini/filters/rule_set.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

using namespace Martini::MPI;
using martini::core::Core;
using martini::filters::RuleSet;

namespace {

struct MethodName {
    std::string cls, method, sig;
    EMethodAccessType access;
};

// 10,000 methods: 1,000 classes in 40 packages, 10 methods each.
const std::vector<MethodName> &Methods() {
    static const std::vector<MethodName> methods = [] {
        const char *packages[] = {"com.acme.shop", "com.acme.shop.internal", "com.acme.billing", "java.util",
                                  "java.util.concurrent", "java.lang", "org.apache.commons.lang3", "jdk.internal.misc"};
        const char *verbs[] = {"get", "set", "compute", "toString", "hashCode", "run", "apply", "put", "visit", "lambda$0"};
        const char *sigs[] = {"()V", "(I)I", "(Ljava/lang/String;)Ljava/lang/Object;", "()Ljava/lang/String;",
                              "(JJ)Z"};
        std::vector<MethodName> out;
        for (int c = 0; c < 1000; ++c) {
            const std::string cls = std::string(packages[c % 8]) + ".sub" + std::to_string(c % 5) + ".Class" + std::to_string(c);
            for (int m = 0; m < 10; ++m) {
                out.push_back({cls, std::string(verbs[m]) + (m < 3 ? "Value" + std::to_string(c % 7) : ""),
                               sigs[(c + m) % 5], static_cast<EMethodAccessType>(1 + (c + m) % 3)});
            }
        }
        return out;
    }();
    return methods;
}

const char kRules[] =
    "-com.acme.shop.internal.*|-*.toString|-*.hashCode()I|-*.lambda$*|+com.acme.*.get*()*@package_api|"
    "+com.acme.*|+java.util.concurrent.*.run|-java.*|-jdk.*|+org.apache.*.apply*(*)*";

void BM_RuleSetPerMethod(benchmark::State &state) {
    RuleSet rules;
    if (std::string e = rules.ParseLine(kRules); !e.empty()) {
        state.SkipWithError(e.c_str());
        return;
    }
    const auto &methods = Methods();
    std::size_t accepted = 0;
    for (auto _ : state) {
        for (const auto &m : methods) accepted += rules.AcceptsMethod(m.cls, m.method, m.sig, m.access);
    }
    benchmark::DoNotOptimize(accepted);
    state.SetItemsProcessed(state.iterations() * methods.size());
    state.counters["accepted_share"] = double(accepted) / double(state.iterations() * methods.size());
}
BENCHMARK(BM_RuleSetPerMethod);

class Provider final : public martini::core::Provider {
public:
    martini::core::RuntimeDescription Describe() const override { return {RT_UNKNOWN, "filter_bench", "0"}; }
    bool CanRaise(TEventType e) const noexcept override { return e == EV_METHOD_ENTER; }
};

class Enter : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID; }
    void HandleEvent(SMethodEnterEventData &) override {}
};

RuleSet gRules;
Enter gEnter;
TResult Instantiate(IMpi *mpi, TId id, const char *) {
    if (TResult r = mpi->RegisterEvent(id, gEnter); r != MRTE_RESULT_OK) return r;
    return mpi->SetEventGroupFilter(id, EG_CALL_GRAPH, gRules.CallGraphFilter());
}

// The core's path at class-load time: filter asked once per method id, the answer
// cached (a fresh id each time here, as each method is instrumented once).
void BM_CoreInterestPerMethod(benchmark::State &state) {
    if (std::string e = gRules.ParseLine(kRules); !e.empty()) {
        state.SkipWithError(e.c_str());
        return;
    }
    Provider provider;
    Core core(provider);
    if (!core.AddClient("bench", &Instantiate, "").ok()) {
        state.SkipWithError("AddClient failed");
        return;
    }
    core.FinishInit();
    const auto &methods = Methods();
    TId next = 1;
    for (auto _ : state) {
        for (const auto &m : methods) {
            SCallGraphFilterData d{m.cls.c_str(), m.method.c_str(), m.sig.c_str(), m.access};
            benchmark::DoNotOptimize(core.CallGraphInterest(next++, d));
        }
    }
    state.SetItemsProcessed(state.iterations() * methods.size());
}
BENCHMARK(BM_CoreInterestPerMethod)->Iterations(20);

}  // namespace

BENCHMARK_MAIN();
