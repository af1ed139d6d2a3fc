// Dispatch: who gets which event, with which data, on which threads.
#include "test_support.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include <atomic>
#include <chrono>
#include <thread>

namespace martini::test {
namespace {

TEST(Dispatch, EachClientSeesOnlyItsOwnRegistrations) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder aEnter;
    LeaveRecorder bLeave;
    AddObserving(core, "a", {&aEnter});
    AddObserving(core, "b", {&bLeave});
    core.FinishInit();
    auto enter = Enter(10);
    core.Raise<IMethodEnterEventObserver>(enter);
    SMethodLeaveEventData leave;
    leave.methodId = 10;
    leave.validData = DR_METHOD_ID;
    core.Raise<IMethodLeaveEventObserver>(leave);
    ASSERT_EQ(aEnter.seen.size(), 1u);
    EXPECT_EQ(aEnter.seen[0].methodId, 10u);
    ASSERT_EQ(bLeave.seen.size(), 1u);
}

TEST(Dispatch, ValidDataIsWhatTheObserverAskedForAndTheProviderGave) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder idsOnly(DR_METHOD_ID | DR_THREAD_ID);
    EnterRecorder timeAndCpu(DR_CPU_TIMESTAMP | DR_THREAD_CPU_TIME);
    AddObserving(core, "ids", {&idsOnly});
    AddObserving(core, "time", {&timeAndCpu});
    core.FinishInit();
    auto d = Enter(3);  // provider gives method, thread and timestamp, not CPU time
    core.Raise<IMethodEnterEventObserver>(d);
    ASSERT_EQ(idsOnly.seen.size(), 1u);
    EXPECT_EQ(idsOnly.seen[0].validData, DR_METHOD_ID | DR_THREAD_ID);
    ASSERT_EQ(timeAndCpu.seen.size(), 1u);
    EXPECT_EQ(timeAndCpu.seen[0].validData, DR_CPU_TIMESTAMP);
    EXPECT_EQ(d.validData, DR_METHOD_ID | DR_THREAD_ID | DR_CPU_TIMESTAMP) << "restored after delivery";
}

TEST(Dispatch, RequestedDataIsTheUnionOfTheObservers) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder a(DR_METHOD_ID), b(DR_THREAD_CPU_TIME);
    AddObserving(core, "a", {&a});
    AddObserving(core, "b", {&b});
    core.FinishInit();
    EXPECT_EQ(core.RequestedData(EV_METHOD_ENTER), DR_METHOD_ID | DR_THREAD_CPU_TIME);
    EXPECT_EQ(core.RequestedData(EV_METHOD_LEAVE), DR_NONE);
}

TEST(Dispatch, ItemsAnEventDoesNotSupportAreNeverRequested) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder greedy(DR_METHOD_ID | DR_THREAD_STATE | DR_OBJECT_SIZE);
    AddObserving(core, "greedy", {&greedy});
    core.FinishInit();
    EXPECT_EQ(core.RequestedData(EV_METHOD_ENTER), DR_METHOD_ID);
}

TEST(Dispatch, NobodyListeningDeliversNothing) {
    FakeProvider provider;
    Core core(provider);
    AddClient(core, "idle", [](IMpi &, TId) { return MRTE_RESULT_OK; });
    core.FinishInit();
    EXPECT_FALSE(core.IsEnabled(EV_METHOD_ENTER));
    EXPECT_FALSE(core.HasObservers(EV_METHOD_ENTER));
    auto d = Enter(1);
    core.Raise<IMethodEnterEventObserver>(d);  // must be a no-op
    EXPECT_EQ(core.GetDiagnostics().reentrantEventsSuppressed, 0u);
}

TEST(Dispatch, InterestMaskLimitsDeliveryToTheInterestedClients) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder a, b;
    AddObserving(core, "a", {&a});
    AddObserving(core, "b", {&b});
    core.FinishInit();
    auto d = Enter(1);
    core.Raise<IMethodEnterEventObserver>(d, ClientMask{1} << 1);  // client index 1 = "b"
    EXPECT_TRUE(a.seen.empty());
    EXPECT_EQ(b.seen.size(), 1u);
    core.Raise<IMethodEnterEventObserver>(d, 0);
    EXPECT_EQ(b.seen.size(), 1u);
}

TEST(Dispatch, DeliveryFollowsClientLoadOrder) {
    FakeProvider provider;
    Core core(provider);
    std::vector<std::string> order;
    EnterRecorder a, b, c;
    a.onEvent = [&](auto &) { order.push_back("a"); };
    b.onEvent = [&](auto &) { order.push_back("b"); };
    c.onEvent = [&](auto &) { order.push_back("c"); };
    AddObserving(core, "a", {&a});
    AddObserving(core, "b", {&b});
    AddObserving(core, "c", {&c});
    core.FinishInit();
    auto d = Enter(1);
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(Dispatch, DisabledGroupIsNotDeliveredAndEnablingResumesIt) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder a, b;
    TId aId = AddObserving(core, "a", {&a});
    AddObserving(core, "b", {&b});
    core.FinishInit();
    auto d = Enter(1);
    ASSERT_EQ(core.Mpi().DisableEventGroup(aId, EG_CALL_GRAPH), MRTE_RESULT_OK);
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_TRUE(a.seen.empty());
    EXPECT_EQ(b.seen.size(), 1u);
    ASSERT_EQ(core.Mpi().EnableEventGroup(aId, EG_CALL_GRAPH), MRTE_RESULT_OK);
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_EQ(a.seen.size(), 1u);
    EXPECT_EQ(b.seen.size(), 2u);
}

TEST(Dispatch, ClientMayStartWithAGroupDisabled) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder a;
    TId id = AddClient(core, "late", [&](IMpi &mpi, TId cid) {
                 mpi.RegisterEvent(cid, a);
                 return mpi.DisableEventGroup(cid, EG_CALL_GRAPH);
             }).clientId;
    core.FinishInit();
    EXPECT_FALSE(core.IsEnabled(EV_METHOD_ENTER));
    auto d = Enter(1);
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_TRUE(a.seen.empty());
    core.Mpi().EnableEventGroup(id, EG_CALL_GRAPH);
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_EQ(a.seen.size(), 1u);
}

TEST(Dispatch, EnablingAGroupThatIsNotOneIsIllegalArgument) {
    FakeProvider provider;
    Core core(provider);
    TId id = AddClient(core, "c", [](IMpi &, TId) { return MRTE_RESULT_OK; }).clientId;
    core.FinishInit();
    EXPECT_EQ(core.Mpi().EnableEventGroup(id, EG_NONE), MRTE_ERROR_ILLEGAL_ARGUMENT);
    EXPECT_EQ(core.Mpi().DisableEventGroup(id, EG_LAST), MRTE_ERROR_ILLEGAL_ARGUMENT);
}

TEST(Dispatch, ProviderIsToldWhenAnEventGainsOrLosesItsLastListener) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder a;
    TId id = AddObserving(core, "a", {&a});
    core.FinishInit();
    ASSERT_EQ(provider.demandChanges.size(), 1u);
    EXPECT_EQ(provider.demandChanges[0], std::make_pair(EV_METHOD_ENTER, true));
    core.Mpi().DisableEventGroup(id, EG_CALL_GRAPH);
    ASSERT_EQ(provider.demandChanges.size(), 2u);
    EXPECT_EQ(provider.demandChanges[1], std::make_pair(EV_METHOD_ENTER, false));
    core.Mpi().DisableEventGroup(id, EG_CALL_GRAPH);  // no change, no call
    EXPECT_EQ(provider.demandChanges.size(), 2u);
}

TEST(Dispatch, EventRaisedInsideAHandlerIsNotDeliveredButCounted) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder a;
    LeaveRecorder leave;
    a.onEvent = [&](SMethodEnterEventData &) {
        auto nested = Enter(99);
        core.Raise<IMethodEnterEventObserver>(nested);  // e.g. the handler ran managed code
        SMethodLeaveEventData l;
        core.Raise<IMethodLeaveEventObserver>(l);
    };
    AddObserving(core, "a", {&a, &leave});
    core.FinishInit();
    auto d = Enter(1);
    core.Raise<IMethodEnterEventObserver>(d);
    ASSERT_EQ(a.seen.size(), 1u);
    EXPECT_EQ(a.seen[0].methodId, 1u);
    EXPECT_TRUE(leave.seen.empty());
    EXPECT_EQ(core.GetDiagnostics().reentrantEventsSuppressed, 2u);
    core.Raise<IMethodEnterEventObserver>(d);  // the guard is released after the handler
    EXPECT_EQ(a.seen.size(), 2u);
}

TEST(Dispatch, HandlerThatThrowsIsContainedLoggedOnceAndCounted) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder thrower, after;
    thrower.onEvent = [](SMethodEnterEventData &) { throw std::runtime_error("index out of range"); };
    TId throwerId = AddObserving(core, "flaky", {&thrower});
    AddObserving(core, "steady", {&after});
    core.FinishInit();
    testing::internal::CaptureStderr();
    auto d = Enter(1);
    for (int i = 0; i < 3; ++i) core.Raise<IMethodEnterEventObserver>(d);
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(after.seen.size(), 3u) << "the event goes on to the other clients";
    EXPECT_EQ(core.ClientHandlerFailures(throwerId), 3u);
    EXPECT_EQ(core.GetDiagnostics().handlerFailures, 3u);
    EXPECT_NE(log.find("client 'flaky'"), std::string::npos) << log;
    EXPECT_NE(log.find("MethodEnter handler"), std::string::npos) << log;
    EXPECT_NE(log.find("index out of range"), std::string::npos) << log;
    EXPECT_EQ(log.find("client 'flaky'"), log.rfind("client 'flaky'")) << "logged once: " << log;
    core.Raise<IMethodEnterEventObserver>(d);  // no handler depth leaked
    EXPECT_EQ(after.seen.size(), 4u);
}

// Delivery has two paths: the inline one when every observer is a target and none asked
// for less than the provider gave, and the general one otherwise (an interest mask, a
// disabled group, an observer wanting fewer items). The re-entrancy guard and the
// containment of a throwing handler hold on both. Enter() gives a timestamp, which the
// default recorders do not ask for, so most tests here take the general path; this one
// takes both, on purpose.
TEST(Dispatch, GuardAndContainmentHoldOnBothDeliveryPaths) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder a, b, c(DR_METHOD_ID);
    a.onEvent = [&](SMethodEnterEventData &) {
        auto nested = Enter(99);
        core.Raise<IMethodEnterEventObserver>(nested);
        core.Raise<IMethodEnterEventObserver>(nested, ClientMask{1} << 1);  // b only
        throw std::runtime_error("a failed");
    };
    TId aId = AddObserving(core, "a", {&a});
    AddObserving(core, "b", {&b});
    TId cId = AddObserving(core, "c", {&c});
    core.FinishInit();
    testing::internal::CaptureStderr();

    // Inline path: all three are targets, and each asked for at least the method id.
    auto idOnly = Enter(1);
    idOnly.validData = DR_METHOD_ID;
    core.Raise<IMethodEnterEventObserver>(idOnly);
    ASSERT_EQ(b.seen.size(), 1u) << "the event went on past a's failure";
    EXPECT_EQ(b.seen[0].methodId, 1u) << "the nested events were not delivered";
    ASSERT_EQ(c.seen.size(), 1u);
    EXPECT_EQ(core.GetDiagnostics().reentrantEventsSuppressed, 2u);
    EXPECT_EQ(core.ClientHandlerFailures(aId), 1u);

    // General path: the provider gives the thread id too, which c did not ask for.
    auto exact = Enter(2);
    exact.validData = DR_METHOD_ID | DR_THREAD_ID;
    core.Raise<IMethodEnterEventObserver>(exact);
    ASSERT_EQ(b.seen.size(), 2u);
    EXPECT_EQ(b.seen[1].methodId, 2u);
    ASSERT_EQ(c.seen.size(), 2u);
    EXPECT_EQ(c.seen[1].validData, DR_METHOD_ID);
    EXPECT_EQ(core.GetDiagnostics().reentrantEventsSuppressed, 4u);
    EXPECT_EQ(core.ClientHandlerFailures(aId), 2u);
    EXPECT_EQ(exact.validData, DR_METHOD_ID | DR_THREAD_ID) << "restored after delivery";

    // A disabled group is the general path too.
    ASSERT_EQ(core.Mpi().DisableEventGroup(cId, EG_CALL_GRAPH), MRTE_RESULT_OK);
    core.Raise<IMethodEnterEventObserver>(idOnly);
    EXPECT_EQ(b.seen.size(), 3u);
    EXPECT_EQ(c.seen.size(), 2u);
    EXPECT_EQ(core.GetDiagnostics().reentrantEventsSuppressed, 6u);

    // The guard was released on both paths.
    a.onEvent = nullptr;
    core.Raise<IMethodEnterEventObserver>(idOnly);
    EXPECT_EQ(a.seen.size(), 4u);
    EXPECT_EQ(b.seen.size(), 4u);
    testing::internal::GetCapturedStderr();
}

TEST(Dispatch, HandlerThatThrowsANonStandardExceptionIsContained) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder thrower;
    thrower.onEvent = [](SMethodEnterEventData &) { throw 42; };
    AddObserving(core, "odd", {&thrower});
    core.FinishInit();
    testing::internal::CaptureStderr();
    auto d = Enter(1);
    core.Raise<IMethodEnterEventObserver>(d);
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find("not a std::exception"), std::string::npos) << log;
}

TEST(Dispatch, EventsWithoutDataAreDelivered) {
    class Shutdown : public IVmShutdownEventObserver {
    public:
        void HandleEvent() override { ++count; }
        int count = 0;
    } shutdown;
    FakeProvider provider;
    Core core(provider);
    AddObserving(core, "c", {&shutdown});
    core.FinishInit();
    core.Raise<IVmShutdownEventObserver>();
    EXPECT_EQ(shutdown.count, 1);
}

// While one client's shutdown handler runs (writing its files, say), the runtime's other
// threads go on raising events. None may reach a client whose handler comes later:
// every client sees the same run, whatever its place in the load order.
TEST(Dispatch, ShutdownStopsDeliveryToEveryClientAtOneInstant) {
    struct Enters : IMethodEnterEventObserver {
        void HandleEvent(SMethodEnterEventData &) override { ++count; }
        std::atomic<int> count{0};
    };
    struct ShutdownRecorder : IVmShutdownEventObserver {
        std::function<void()> action;
        void HandleEvent() override { action(); }
    };
    Enters firstEnters, secondEnters;
    ShutdownRecorder firstShutdown, secondShutdown;
    FakeProvider provider;
    Core core(provider);
    AddObserving(core, "first", {&firstEnters, &firstShutdown});
    AddObserving(core, "second", {&secondEnters, &secondShutdown});
    core.FinishInit();
    core.SetLive(true);
    auto d = Enter(1);
    core.Raise<IMethodEnterEventObserver>(d);
    int secondAtShutdown = -1;
    firstShutdown.action = [&] {
        std::thread daemon([&] {  // another runtime thread, still running
            auto e = Enter(2);
            core.Raise<IMethodEnterEventObserver>(e);
        });
        daemon.join();
    };
    secondShutdown.action = [&] { secondAtShutdown = secondEnters.count; };
    core.Shutdown();
    EXPECT_EQ(firstEnters.count, 1);
    EXPECT_EQ(secondAtShutdown, 1);
    // Nothing is delivered after shutdown, whatever a client asks for.
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_EQ(core.Mpi().EnableEventGroup(1, EG_CALL_GRAPH), MRTE_RESULT_OK);
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_EQ(firstEnters.count + secondEnters.count, 2);
    core.Shutdown();  // a second call does nothing
    SThreadInfo info;
    EXPECT_EQ(core.Mpi().GetThreadInfo(1, 1, DR_THREAD_STATE, &info), MRTE_ERROR_PHASE_FAILURE);
}

// A provider's own runtime calls (the JVM agent's JNI calls that run Java code) raise
// events on the thread; none may reach a client as if the program had made the call.
TEST(Dispatch, EventsDuringTheProvidersOwnWorkAreNotDelivered) {
    struct Enters : IMethodEnterEventObserver {
        void HandleEvent(SMethodEnterEventData &) override { ++count; }
        int count = 0;
    } enters;
    FakeProvider provider;
    Core core(provider);
    AddObserving(core, "c", {&enters});
    core.FinishInit();
    auto d = Enter(1);
    {
        core::OwnWorkScope own;
        core.Raise<IMethodEnterEventObserver>(d);
        {
            core::OwnWorkScope nested;
            core.Raise<IMethodEnterEventObserver>(d);
        }
        core.Raise<IMethodEnterEventObserver>(d);
    }
    EXPECT_EQ(enters.count, 0);
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_EQ(enters.count, 1);
    EXPECT_EQ(core.GetDiagnostics().reentrantEventsSuppressed, 3u);
}

// Counts events from many threads; the first events of two threads must overlap in
// time, which proves that handlers are not serialized by the core.
class ConcurrentCounter : public IMethodEnterEventObserver {
public:
    BitSet EventDataTypes() override { return DR_METHOD_ID | DR_THREAD_ID; }
    void HandleEvent(SMethodEnterEventData &data) override {
        count.fetch_add(1, std::memory_order_relaxed);
        perThread[data.threadId].fetch_add(1, std::memory_order_relaxed);
        // The first thread to arrive waits inside its handler for the second one.
        if (!overlapped.load()) {
            arrived.fetch_add(1);
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline) {
                std::this_thread::yield();
            }
            if (arrived.load() >= 2) overlapped = true;
        }
    }
    std::atomic<std::uint64_t> count{0};
    std::atomic<std::uint64_t> perThread[3]{};
    std::atomic<int> arrived{0};
    std::atomic<bool> overlapped{false};
};

TEST(Dispatch, HandlerRunsOnTwoThreadsAtOnceWithExactCounts) {
    FakeProvider provider;
    Core core(provider);
    ConcurrentCounter counter;
    AddObserving(core, "counter", {&counter});
    core.FinishInit();
    constexpr int kEvents = 200000;
    auto work = [&](TId thread) {
        auto d = Enter(1, thread);
        for (int i = 0; i < kEvents; ++i) core.Raise<IMethodEnterEventObserver>(d);
    };
    std::thread t1(work, 1), t2(work, 2);
    t1.join();
    t2.join();
    EXPECT_TRUE(counter.overlapped.load()) << "two handlers were never inside at the same time";
    EXPECT_EQ(counter.count.load(), 2u * kEvents);
    EXPECT_EQ(counter.perThread[1].load(), unsigned(kEvents));
    EXPECT_EQ(counter.perThread[2].load(), unsigned(kEvents));
    EXPECT_EQ(core.GetDiagnostics().reentrantEventsSuppressed, 0u);
}

TEST(Dispatch, GroupToggledWhileOtherThreadsRaiseLosesNothingElse) {
    FakeProvider provider;
    Core core(provider);
    ConcurrentCounter toggled, steady;
    toggled.overlapped = true;  // only counting here
    steady.overlapped = true;
    TId toggledId = AddObserving(core, "toggled", {&toggled});
    AddObserving(core, "steady", {&steady});
    core.FinishInit();
    std::atomic<bool> stop{false};
    std::thread toggler([&] {
        while (!stop.load()) {
            core.Mpi().DisableEventGroup(toggledId, EG_CALL_GRAPH);
            core.Mpi().EnableEventGroup(toggledId, EG_CALL_GRAPH);
        }
    });
    constexpr int kEvents = 100000;
    auto d = Enter(1, 1);
    for (int i = 0; i < kEvents; ++i) core.Raise<IMethodEnterEventObserver>(d);
    stop = true;
    toggler.join();
    EXPECT_EQ(steady.count.load(), unsigned(kEvents));
    EXPECT_LE(toggled.count.load(), unsigned(kEvents));
}

// The providers fill event data through core::Put: an item nobody asked for is left
// out, and a value passed as a callable (a clock read) is not even computed.
TEST(ProviderSpi, PutFillsOnlyWantedItemsAndComputesOnlyThem) {
    SMethodEnterEventData d;
    int clockReads = 0;
    auto clock = [&clockReads] {
        ++clockReads;
        return std::uint64_t{42};
    };
    core::Put(d, DR_METHOD_ID, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, clock);
    EXPECT_EQ(clockReads, 0);
    EXPECT_EQ(d.validData, DR_NONE);
    core::Put(d, DR_METHOD_ID, DR_METHOD_ID, d.methodId, TId{7});
    core::Put(d, DR_METHOD_ID | DR_CPU_TIMESTAMP, DR_CPU_TIMESTAMP, d.uiCpuTimestamp, clock);
    EXPECT_EQ(clockReads, 1);
    EXPECT_EQ(d.methodId, 7u);
    EXPECT_EQ(d.uiCpuTimestamp, 42u);
    EXPECT_EQ(d.validData, DR_METHOD_ID | DR_CPU_TIMESTAMP);
}

}  // namespace
}  // namespace martini::test
