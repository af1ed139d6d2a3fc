// The conformance kit reports each broken promise by its rule. A provider that breaks
// them on purpose (this test's) must be caught; the replay provider must pass
// (tests/conformance_replay_test.sh).
#include "martini/core/core.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using namespace Martini::MPI;
using martini::core::Core;

class BrokenProvider : public martini::core::Provider {
public:
    martini::core::RuntimeDescription Describe() const override { return {RT_UNKNOWN, "broken", "0"}; }
    bool CanRaise(TEventType) const noexcept override { return true; }
    TResult DescribeMethod(TId id, BitSet, martini::core::MethodFacts &f) noexcept override {
        if (id == 2) return MRTE_ERROR_ILLEGAL_ID;  // a method it raised events for
        // A std::string moved in, not assign(const char *): g++ 12 at -O3 reports a
        // false -Wrestrict overlap inside basic_string::_M_replace for the latter
        // (GCC bug 105329).
        f.name = std::string("m");
        f.given = DR_METHOD_NAME;
        if (id == 1) {  // a module never announced, which its class does not have either
            f.moduleId = 9;
            f.classId = 3;
            f.given |= DR_MODULE_ID | DR_CLASS_ID;
        }
        return MRTE_RESULT_OK;
    }
    TResult DescribeModule(TId, BitSet, martini::core::ModuleFacts &f) noexcept override {
        f.name = "other.jar";  // not the name its ModuleLoad gave
        f.given = DR_MODULE_NAME;
        return MRTE_RESULT_OK;
    }
    TResult DescribeThread(TId, BitSet, unsigned, martini::core::ThreadFacts &f) noexcept override {
        f.state = TS_RUNNING;
        f.given = DR_THREAD_STATE;
        return MRTE_RESULT_OK;
    }
};

SMethodEnterEventData Enter(TId method, TId thread) {
    SMethodEnterEventData d;
    d.methodId = method;
    d.threadId = thread;
    d.validData = DR_METHOD_ID | DR_THREAD_ID;
    return d;
}
SMethodLeaveEventData Leave(TId method, TId thread) {
    SMethodLeaveEventData d;
    d.methodId = method;
    d.threadId = thread;
    d.validData = DR_METHOD_ID | DR_THREAD_ID;
    return d;
}

TEST(Conformance, EveryBrokenPromiseIsReportedByItsRule) {
    BrokenProvider provider;
    Core core(provider);
    const std::string report = testing::TempDir() + "conformance-report.jsonl";
    std::remove(report.c_str());
    auto r = core.LoadClient({"conformance", CONFORMANCE_CLIENT, "report=" + report});
    ASSERT_TRUE(r.ok()) << r.error;
    core.FinishInit();
    core.SetLive(true);

    SVmInitEventData init;
    core.Raise<IVmInitEventObserver>(init);
    core.Raise<IVmInitEventObserver>(init);  // lifecycle: twice

    auto e1 = Enter(1, 7), e2 = Enter(2, 7);
    core.Raise<IMethodEnterEventObserver>(e1);
    core.Raise<IMethodEnterEventObserver>(e2);
    auto wrong = Leave(1, 7);  // pairing: innermost is 2
    core.Raise<IMethodLeaveEventObserver>(wrong);
    auto orphan = Leave(3, 8);  // pairing: nothing entered on thread 8
    core.Raise<IMethodLeaveEventObserver>(orphan);

    SThreadEndEventData end;
    end.threadId = 7;
    end.validData = DR_THREAD_ID;
    core.Raise<IThreadEndEventObserver>(end);  // thread-end: 1 method still open
    auto late = Enter(1, 7);
    core.Raise<IMethodEnterEventObserver>(late);  // thread-end: event after ThreadEnd

    SGcEndEventData gcEnd;
    core.Raise<IGcEndEventObserver>(gcEnd);  // gc-order

    SMonitorWaitedEventData waited;
    waited.threadId = 9;
    waited.objectId = 5;
    waited.validData = DR_THREAD_ID | DR_OBJECT_ID;
    core.Raise<IMonitorWaitedEventObserver>(waited);  // monitor-order

    SObjectAllocEventData alloc;
    alloc.threadId = 9;
    alloc.validData = DR_THREAD_ID | DR_OBJECT_ID;  // ids: objectId 0 marked valid
    core.Raise<IObjectAllocEventObserver>(alloc);

    SModuleLoadEventData module;
    module.moduleId = 4;
    module.szModuleName = "app.jar";
    module.validData = DR_MODULE_ID | DR_MODULE_NAME;
    core.Raise<IModuleLoadEventObserver>(module);
    SClassLoadEventData cls;
    cls.classId = 1;
    cls.szClassName = "C";
    cls.moduleId = 5;  // modules: no ModuleLoad for 5
    cls.validData = DR_CLASS_ID | DR_CLASS_NAME | DR_MODULE_ID;
    core.Raise<IClassLoadEventObserver>(cls);
    testing::internal::CaptureStderr();
    core.Raise<IVmShutdownEventObserver>();  // data-requests: method 2 unknown; module 4 misnamed
    auto after = Enter(1, 9);
    core.Raise<IMethodEnterEventObserver>(after);  // lifecycle: after VmShutdown (counted, not reported)
    const std::string log = testing::internal::GetCapturedStderr();

    std::ifstream in(report);
    ASSERT_TRUE(in) << report;
    std::stringstream text;
    text << in.rdbuf();
    const std::string json = text.str();
    for (const char *rule : {"lifecycle", "pairing", "thread-end", "gc-order", "monitor-order", "ids",
                             "data-requests", "modules"}) {
        EXPECT_NE(json.find(std::string("\"rule\":\"") + rule + "\""), std::string::npos) << rule << "\n" << json;
    }
    EXPECT_NE(json.find("but the innermost entered is 2"), std::string::npos) << json;
    EXPECT_NE(json.find("ClassLoad names module 5 before its ModuleLoad"), std::string::npos) << json;
    EXPECT_NE(json.find("not the ModuleLoad's 'app.jar'"), std::string::npos) << json;
    EXPECT_NE(json.find("{\"module\":4,\"name\":\"app.jar\",\"classes\":0,\"methods\":0}"), std::string::npos) << json;
    EXPECT_NE(json.find("GetMethodInfo(1) names module 9, never announced by ModuleLoad"), std::string::npos) << json;
    EXPECT_NE(json.find("GetMethodInfo(1) gives module 9, GetClassInfo of its class does not"), std::string::npos) << json;
    EXPECT_NE(json.find("\"verdict\":\"fail\""), std::string::npos) << json;
    EXPECT_NE(log.find("conformance: FAIL"), std::string::npos) << log;
}

}  // namespace
