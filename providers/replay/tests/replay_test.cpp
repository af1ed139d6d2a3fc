// The replay provider plays traces as a runtime would, and names bad records.
#include "martini/replay/replay_provider.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace martini::test {
namespace {

using namespace Martini::MPI;
using core::Core;

// Records call-graph events and shutdown; filters to classes starting with `prefix`.
class CallRecorder : public IMethodEnterEventObserver,
                     public IMethodLeaveEventObserver,
                     public IVmShutdownEventObserver,
                     public ICallGraphFilter {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | DR_THREAD_ID | DR_CPU_TIMESTAMP; }
    void HandleEvent(SMethodEnterEventData &d) override {
        ++enters[d.methodId];
        log << "+" << d.methodId << "@" << d.threadId << " ";
        lastTimestamp = d.uiCpuTimestamp;
    }
    void HandleEvent(SMethodLeaveEventData &d) override {
        if (d.bIsExceptionExit) ++exceptionExits[d.methodId];
        log << "-" << d.methodId << (d.bIsExceptionExit ? "!" : "") << " ";
    }
    void HandleEvent() override { ++shutdowns; }
    bool ShouldNotify(SCallGraphFilterData &d) override {
        return std::strncmp(d.szClassName, prefix.c_str(), prefix.size()) == 0;
    }
    std::string prefix;
    std::map<TId, int> enters, exceptionExits;
    std::ostringstream log;
    int shutdowns = 0;
    std::uint64_t lastTimestamp = 0;
};

CallRecorder *g_recorder = nullptr;

struct Played {
    std::string error;
    replay::ReplayProvider::Stats stats;
};

Played Play(CallRecorder &recorder, std::istream &in, bool filter = false) {
    replay::ReplayProvider provider;
    Core core(provider);
    g_recorder = &recorder;
    static bool useFilter;
    useFilter = filter;
    auto r = core.AddClient(
        "recorder",
        [](IMpi *mpi, TId id, const char *) {
            mpi->RegisterEvent(id, static_cast<IMethodEnterEventObserver &>(*g_recorder));
            mpi->RegisterEvent(id, static_cast<IMethodLeaveEventObserver &>(*g_recorder));
            mpi->RegisterEvent(id, static_cast<IVmShutdownEventObserver &>(*g_recorder));
            if (useFilter) mpi->SetEventGroupFilter(id, EG_CALL_GRAPH, *g_recorder);
            return MRTE_RESULT_OK;
        },
        "");
    EXPECT_TRUE(r.ok());
    core.FinishInit();
    Played p;
    p.error = provider.Play(core, in, "t.jsonl");
    p.stats = provider.GetStats();
    return p;
}

Played PlayText(CallRecorder &recorder, const std::string &text, bool filter = false) {
    std::istringstream in(text);
    return Play(recorder, in, filter);
}

const std::string kHeader = R"({"event":"ThreadStart","thread":1,"name":"main"}
{"event":"ClassLoad","class":1,"name":"app.Main"}
{"event":"ClassLoad","class":2,"name":"java.lang.String"}
{"event":"NewMethod","method":10,"class":1,"name":"main"}
{"event":"NewMethod","method":11,"class":1,"name":"helper"}
{"event":"NewMethod","method":20,"class":2,"name":"length"}
{"event":"VmInit","thread":1}
)";

TEST(Replay, EnterAndLeaveAreDeliveredInOrderWithExceptionalExitsFlagged) {
    CallRecorder r;
    auto p = PlayText(r, kHeader + R"({"event":"MethodEnter","thread":1,"method":10}
{"event":"MethodEnter","thread":1,"method":11}
{"event":"MethodLeave","thread":1,"method":11,"exception":true}
{"event":"MethodLeave","thread":1,"exception":true}
)");
    EXPECT_EQ(p.error, "");
    EXPECT_EQ(r.log.str(), "+10@1 +11@1 -11! -10! ");
    EXPECT_EQ(r.shutdowns, 1) << "VmShutdown raised at the end of a trace that lacks it";
}

TEST(Replay, MethodsNoFilterWantsAreNeverRaisedAndCostNothing) {
    CallRecorder r;
    r.prefix = "app.";
    auto p = PlayText(r, kHeader + R"({"event":"MethodEnter","thread":1,"method":10}
{"event":"MethodEnter","thread":1,"method":20}
{"event":"MethodLeave","thread":1}
{"event":"MethodLeave","thread":1}
{"event":"VmShutdown"}
)", true);
    EXPECT_EQ(p.error, "");
    EXPECT_EQ(r.log.str(), "+10@1 -10 ");
    EXPECT_EQ(p.stats.methodsNotInstrumented, 1u);
    EXPECT_EQ(p.stats.callsNotInstrumented, 1u);
}

TEST(Replay, TimestampsComeFromTheTraceOrASyntheticClock) {
    CallRecorder r;
    PlayText(r, kHeader + R"({"event":"MethodEnter","thread":1,"method":10,"t":123456789}
)");
    EXPECT_EQ(r.lastTimestamp, 123456789u);
    CallRecorder s;
    PlayText(s, kHeader + R"({"event":"MethodEnter","thread":1,"method":10}
)");
    EXPECT_EQ(s.lastTimestamp, 8000u) << "1 us per record";
}

struct BadRecord {
    const char *record;
    const char *expected;
};

class ReplayBadRecord : public testing::TestWithParam<BadRecord> {};

TEST_P(ReplayBadRecord, IsNamedWithFileLineAndReasonAndPlaybackStops) {
    CallRecorder r;
    auto p = PlayText(r, kHeader + GetParam().record + "\n" + R"({"event":"MethodEnter","thread":1,"method":10}
)");
    EXPECT_NE(p.error.find("t.jsonl:8: "), std::string::npos) << p.error;
    EXPECT_NE(p.error.find(GetParam().expected), std::string::npos) << p.error;
    EXPECT_TRUE(r.enters.empty()) << "nothing after the bad record is played";
    EXPECT_EQ(r.shutdowns, 1) << "clients still get VmShutdown and write what they have";
}

INSTANTIATE_TEST_SUITE_P(
    Records, ReplayBadRecord,
    testing::Values(BadRecord{"{not json", "parse error"},
                    BadRecord{R"(["an","array"])", "must be a JSON object"},
                    BadRecord{R"({"event":"MethodEntr","thread":1,"method":10})", "unknown event \"MethodEntr\""},
                    BadRecord{R"({"event":"MethodEnter","thread":1})", "missing field \"method\""},
                    BadRecord{R"({"event":"MethodEnter","thread":1,"method":99})", "method 99 was not declared"},
                    BadRecord{R"({"event":"MethodEnter","thread":5,"method":10})", "thread 5 was not started"},
                    BadRecord{R"({"event":"MethodEnter","thread":1,"method":"x"})", "must be a positive integer"},
                    BadRecord{R"({"event":"MethodLeave","thread":1})", "no method entered"},
                    BadRecord{R"({"event":"NewMethod","method":12,"class":1,"name":"m","access":"public"})",
                              "field \"access\" must be"},
                    BadRecord{R"({"event":"VmInit"})", "VmInit was already replayed"},
                    BadRecord{R"({"event":"ObjectAlloc","thread":1,"object":5,"class":1,"refs":7})",
                              "field \"refs\" must be an array"},
                    BadRecord{R"({"event":"GcMovedReferences","moved":[[0,3]]})", "positive object ids"}));

TEST(Replay, RecordsAfterVmShutdownAreBadRecords) {
    CallRecorder r;
    auto p = PlayText(r, kHeader + R"({"event":"VmShutdown"}
{"event":"MethodEnter","thread":1,"method":10}
)");
    EXPECT_NE(p.error.find("t.jsonl:9: record after VmShutdown"), std::string::npos) << p.error;
    EXPECT_EQ(r.shutdowns, 1);
}

TEST(Replay, VmShutdownBeforeVmInitIsABadRecord) {
    CallRecorder r;
    auto p = PlayText(r, R"({"event":"VmShutdown"}
)");
    EXPECT_NE(p.error.find("t.jsonl:1: VmShutdown before VmInit"), std::string::npos) << p.error;
    EXPECT_EQ(r.shutdowns, 0);
}

TEST(Replay, LeaveOfAnotherMethodThanTheInnermostIsABadRecord) {
    CallRecorder r;
    auto p = PlayText(r, kHeader + R"({"event":"MethodEnter","thread":1,"method":10}
{"event":"MethodEnter","thread":1,"method":11}
{"event":"MethodLeave","thread":1,"method":10}
)");
    EXPECT_NE(p.error.find("t.jsonl:10: MethodLeave of method 10 but the innermost entered method is 11"),
              std::string::npos)
        << p.error;
}

TEST(Replay, ThreadEndingWithOpenFramesIsABadRecord) {
    CallRecorder r;
    auto p = PlayText(r, kHeader + R"({"event":"MethodEnter","thread":1,"method":10}
{"event":"ThreadEnd","thread":1}
)");
    EXPECT_NE(p.error.find("thread 1 ended with 1 method(s) not left"), std::string::npos) << p.error;
}

TEST(Replay, BundledShopTraceHasTheProgramsKnownCounts) {
    std::ifstream in(SHOP_TRACE);
    ASSERT_TRUE(in) << SHOP_TRACE;
    CallRecorder r;
    auto p = Play(r, in);
    EXPECT_EQ(p.error, "");
    // From make_shop_trace.py --known: 2 threads x 60 orders, every 7th fails.
    EXPECT_EQ(r.enters[110], 120);  // OrderService.placeOrder
    EXPECT_EQ(r.enters[120], 120);  // Inventory.reserve
    EXPECT_EQ(r.exceptionExits[120], 16);
    EXPECT_EQ(r.exceptionExits[130], 16);  // Warehouse.take unwinds too
    EXPECT_EQ(r.exceptionExits[110], 0);   // placeOrder catches it
    EXPECT_EQ(r.enters[140], 104);         // PriceCalculator.total
    EXPECT_EQ(r.shutdowns, 1);
}

TEST(Replay, EveryCatalogEventHasATraceName) {
#define MARTINI_X_CHECK(Name, Const, Number, Group, Items, Shape) EXPECT_EQ(replay::EventFromName(#Name), Const);
    MARTINI_MPI_EVENTS(MARTINI_X_CHECK)
#undef MARTINI_X_CHECK
    EXPECT_EQ(replay::EventFromName("NoSuchEvent"), EV_NONE);
}

}  // namespace
}  // namespace martini::test
