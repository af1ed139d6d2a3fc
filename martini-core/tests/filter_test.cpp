// Filters run once per element at instrumentation time, never per event.
#include "test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

namespace martini::test {
namespace {

class ClassPrefixFilter : public ICallGraphFilter {
public:
    explicit ClassPrefixFilter(const char *prefix) : prefix_(prefix) {}
    bool ShouldNotify(SCallGraphFilterData &data) override {
        calls.fetch_add(1);
        last = data;
        return std::strncmp(data.szClassName, prefix_, std::strlen(prefix_)) == 0;
    }
    std::atomic<int> calls{0};
    SCallGraphFilterData last{};

private:
    const char *prefix_;
};

TId AddFiltered(Core &core, const std::string &name, IEventObserver &observer, ICallGraphFilter *filter) {
    return AddClient(core, name, [&observer, filter](IMpi &mpi, TId id) {
               mpi.RegisterEvent(id, observer);
               if (filter != nullptr) return mpi.SetEventGroupFilter(id, EG_CALL_GRAPH, *filter);
               return MRTE_RESULT_OK;
           }).clientId;
}

SCallGraphFilterData Method(const char *cls, const char *name = "run") {
    return {cls, name, "()V", MAT_PACKAGE_API};
}

TEST(Filters, FilterIsAskedOncePerElement) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder enter;
    ClassPrefixFilter filter("com.acme");
    AddFiltered(core, "a", enter, &filter);
    core.FinishInit();
    auto m = Method("com.acme.Foo");
    EXPECT_EQ(core.CallGraphInterest(100, m), ClientMask{1});
    EXPECT_EQ(core.CallGraphInterest(100, m), ClientMask{1});
    EXPECT_EQ(filter.calls.load(), 1);
    EXPECT_EQ(core.GetDiagnostics().filterCalls, 1u);
}

TEST(Filters, FilterSeesClassMethodSignatureAndAccess) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder enter;
    ClassPrefixFilter filter("");
    AddFiltered(core, "a", enter, &filter);
    core.FinishInit();
    SCallGraphFilterData m{"java.util.HashMap$Node", "getKey", "()Ljava/lang/Object;", MAT_PACKAGE_INTERNAL};
    core.CallGraphInterest(7, m);
    EXPECT_STREQ(filter.last.szClassName, "java.util.HashMap$Node");
    EXPECT_STREQ(filter.last.szMethodName, "getKey");
    EXPECT_STREQ(filter.last.szMethodSignature, "()Ljava/lang/Object;");
    EXPECT_EQ(filter.last.methodAccessType, MAT_PACKAGE_INTERNAL);
}

TEST(Filters, MethodNobodyWantsHasNoInterestedClient) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder a, b;
    ClassPrefixFilter fa("com.acme"), fb("org.example");
    AddFiltered(core, "a", a, &fa);
    AddFiltered(core, "b", b, &fb);
    core.FinishInit();
    auto jdk = Method("java.lang.String");
    EXPECT_EQ(core.CallGraphInterest(1, jdk), ClientMask{0}) << "0 = do not instrument";
    auto acme = Method("com.acme.Foo");
    auto example = Method("org.example.Bar");
    EXPECT_EQ(core.CallGraphInterest(2, acme), ClientMask{1});
    EXPECT_EQ(core.CallGraphInterest(3, example), ClientMask{2});
}

TEST(Filters, ClientWithoutAFilterWantsEveryElement) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder a;
    AddFiltered(core, "a", a, nullptr);
    core.FinishInit();
    auto m = Method("anything.At.All");
    EXPECT_EQ(core.CallGraphInterest(1, m), ClientMask{1});
}

TEST(Filters, ClientWithNoObserverInTheGroupWantsNoElement) {
    FakeProvider provider;
    Core core(provider);
    class Shutdown : public IVmShutdownEventObserver {
    public:
        void HandleEvent() override {}
    } shutdown;
    AddObserving(core, "not-call-graph", {&shutdown});
    core.FinishInit();
    auto m = Method("com.acme.Foo");
    EXPECT_EQ(core.CallGraphInterest(1, m), ClientMask{0});
}

TEST(Filters, FilterThatThrowsMeansNotWantedAndIsCountedAndLoggedOnce) {
    FakeProvider provider;
    Core core(provider);
    class Throwing : public ICallGraphFilter {
    public:
        bool ShouldNotify(SCallGraphFilterData &) override { throw std::logic_error("bad pattern"); }
    } filter;
    EnterRecorder a, b;
    AddFiltered(core, "broken", a, &filter);
    AddFiltered(core, "fine", b, nullptr);
    core.FinishInit();
    testing::internal::CaptureStderr();
    auto m1 = Method("x.A"), m2 = Method("x.B");
    EXPECT_EQ(core.CallGraphInterest(1, m1), ClientMask{2});
    EXPECT_EQ(core.CallGraphInterest(2, m2), ClientMask{2});
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(core.GetDiagnostics().filterFailures, 2u);
    EXPECT_NE(log.find("client 'broken': its filter threw"), std::string::npos) << log;
    EXPECT_NE(log.find("bad pattern"), std::string::npos);
    EXPECT_EQ(log.find("its filter threw"), log.rfind("its filter threw"));
}

TEST(Filters, ConcurrentInstrumentationOfOneMethodAsksTheFilterOnce) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder enter;
    ClassPrefixFilter filter("com.acme");
    AddFiltered(core, "a", enter, &filter);
    core.FinishInit();
    std::vector<std::thread> threads;
    std::atomic<int> wanted{0};
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&] {
            for (TId id = 1; id <= 500; ++id) {
                auto m = Method("com.acme.Foo");
                if (core.CallGraphInterest(id, m) != 0) wanted.fetch_add(1);
            }
        });
    }
    for (auto &t : threads) t.join();
    EXPECT_EQ(filter.calls.load(), 500);
    EXPECT_EQ(wanted.load(), 8 * 500);
}

TEST(Filters, EachGroupHasItsOwnFilterAndCache) {
    FakeProvider provider;
    Core core(provider);
    class ObjectAlloc : public IObjectAllocEventObserver {
    public:
        void HandleEvent(SObjectAllocEventData &) override {}
    } alloc;
    class MonitorWait : public IMonitorWaitEventObserver {
    public:
        void HandleEvent(SMonitorWaitEventData &) override {}
    } wait;
    class Interaction : public IThreadInteractionEventObserver {
    public:
        void HandleEvent(SThreadInteractionEventData &) override {}
    } interaction;
    class OnlyStrings : public IHeapFilter {
    public:
        bool ShouldNotify(SHeapFilterData &d) override { return std::strcmp(d.szClassName, "java.lang.String") == 0; }
    } heapFilter;
    class OnlyLocks : public IMonitorFilter {
    public:
        bool ShouldNotify(SMonitorFilterData &d) override { return std::strstr(d.szClassName, "Lock") != nullptr; }
    } monitorFilter;
    class OnlyMain : public IThreadInteractionFilter {
    public:
        bool ShouldNotify(SThreadInteractionFilterData &d) override { return std::strcmp(d.szMethodName, "main") == 0; }
    } interactionFilter;
    AddClient(core, "all-groups", [&](IMpi &mpi, TId id) {
        mpi.RegisterEvent(id, alloc);
        mpi.RegisterEvent(id, wait);
        mpi.RegisterEvent(id, interaction);
        mpi.SetEventGroupFilter(id, EG_HEAP, heapFilter);
        mpi.SetEventGroupFilter(id, EG_MONITOR, monitorFilter);
        mpi.SetEventGroupFilter(id, EG_THREAD_INTERACTION, interactionFilter);
        return MRTE_RESULT_OK;
    });
    core.FinishInit();
    SHeapFilterData string{"java.lang.String"}, list{"java.util.ArrayList"};
    EXPECT_EQ(core.HeapInterest(1, string), ClientMask{1});
    EXPECT_EQ(core.HeapInterest(2, list), ClientMask{0});
    SMonitorFilterData lock{"com.acme.TableLock"}, other{"java.lang.Object"};
    EXPECT_EQ(core.MonitorInterest(1, lock), ClientMask{1}) << "same id as a heap element, own cache";
    EXPECT_EQ(core.MonitorInterest(2, other), ClientMask{0});
    SThreadInteractionFilterData mainSite{"app.Main", "main", "([Ljava/lang/String;)V"};
    SThreadInteractionFilterData workerSite{"app.Worker", "run", "()V"};
    EXPECT_EQ(core.ThreadInteractionInterest(1, mainSite), ClientMask{1});
    EXPECT_EQ(core.ThreadInteractionInterest(2, workerSite), ClientMask{0});
}

}  // namespace
}  // namespace martini::test
