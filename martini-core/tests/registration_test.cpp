// Registration is legal only inside the client's own MPICL_Instantiate.
#include "test_support.h"

#include <gtest/gtest.h>

#include <thread>

namespace martini::test {
namespace {

class CallGraphFilterAll : public ICallGraphFilter {
public:
    bool ShouldNotify(SCallGraphFilterData &) override { return true; }
};
class HeapFilterAll : public IHeapFilter {
public:
    bool ShouldNotify(SHeapFilterData &) override { return true; }
};

TEST(Registration, RegisterEventSucceedsInsideInstantiate) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder enter;
    TResult seen = MRTE_ERROR_FAIL;
    auto r = AddClient(core, "c", [&](IMpi &mpi, TId id) {
        seen = mpi.RegisterEvent(id, enter);
        return MRTE_RESULT_OK;
    });
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(seen, MRTE_RESULT_OK);
    core.FinishInit();
    EXPECT_TRUE(core.HasObservers(EV_METHOD_ENTER));
}

TEST(Registration, RegisterEventAfterInstantiateIsPhaseFailure) {
    FakeProvider provider;
    Core core(provider);
    TId id = AddClient(core, "c", [](IMpi &, TId) { return MRTE_RESULT_OK; }).clientId;
    EnterRecorder enter;
    EXPECT_EQ(core.Mpi().RegisterEvent(id, enter), MRTE_ERROR_PHASE_FAILURE);
    core.FinishInit();
    EXPECT_EQ(core.Mpi().RegisterEvent(id, enter), MRTE_ERROR_PHASE_FAILURE);
    EXPECT_FALSE(core.HasObservers(EV_METHOD_ENTER));
}

TEST(Registration, RegisterEventForAnotherClientIdIsPhaseFailure) {
    FakeProvider provider;
    Core core(provider);
    TId first = AddClient(core, "a", [](IMpi &, TId) { return MRTE_RESULT_OK; }).clientId;
    EnterRecorder enter;
    TResult seen = MRTE_RESULT_OK;
    AddClient(core, "b", [&](IMpi &mpi, TId) {
        seen = mpi.RegisterEvent(first, enter);
        return MRTE_RESULT_OK;
    });
    EXPECT_EQ(seen, MRTE_ERROR_PHASE_FAILURE);
}

TEST(Registration, RegisterEventFromAnotherThreadDuringInstantiateIsPhaseFailure) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder enter;
    TResult seen = MRTE_RESULT_OK;
    AddClient(core, "c", [&](IMpi &mpi, TId id) {
        std::thread t([&] { seen = mpi.RegisterEvent(id, enter); });
        t.join();
        return MRTE_RESULT_OK;
    });
    EXPECT_EQ(seen, MRTE_ERROR_PHASE_FAILURE);
}

TEST(Registration, UnknownClientIdIsIllegalId) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder enter;
    EXPECT_EQ(core.Mpi().RegisterEvent(0, enter), MRTE_ERROR_ILLEGAL_ID);
    EXPECT_EQ(core.Mpi().RegisterEvent(42, enter), MRTE_ERROR_ILLEGAL_ID);
    EXPECT_EQ(core.Mpi().EnableEventGroup(42, EG_CALL_GRAPH), MRTE_ERROR_ILLEGAL_ID);
}

TEST(Registration, EventTheProviderCannotRaiseIsNotSupported) {
    FakeProvider provider;
    provider.unsupported.insert(EV_METHOD_ENTER);
    Core core(provider);
    EnterRecorder enter;
    LeaveRecorder leave;
    TResult enterResult = MRTE_RESULT_OK, leaveResult = MRTE_ERROR_FAIL;
    AddClient(core, "c", [&](IMpi &mpi, TId id) {
        enterResult = mpi.RegisterEvent(id, enter);
        leaveResult = mpi.RegisterEvent(id, leave);
        return MRTE_RESULT_OK;
    });
    EXPECT_EQ(enterResult, MRTE_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(leaveResult, MRTE_RESULT_OK);
}

TEST(Registration, SecondObserverForTheSameEventIsIllegalArgument) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder a, b;
    TResult second = MRTE_RESULT_OK;
    AddClient(core, "c", [&](IMpi &mpi, TId id) {
        mpi.RegisterEvent(id, a);
        second = mpi.RegisterEvent(id, b);
        return MRTE_RESULT_OK;
    });
    EXPECT_EQ(second, MRTE_ERROR_ILLEGAL_ARGUMENT);
}

TEST(Registration, FilterOfAnotherGroupIsIllegalArgument) {
    FakeProvider provider;
    Core core(provider);
    HeapFilterAll heap;
    CallGraphFilterAll cg, cg2;
    TResult wrongGroup = MRTE_RESULT_OK, right = MRTE_ERROR_FAIL, twice = MRTE_RESULT_OK,
            noGroup = MRTE_RESULT_OK;
    AddClient(core, "c", [&](IMpi &mpi, TId id) {
        wrongGroup = mpi.SetEventGroupFilter(id, EG_CALL_GRAPH, heap);
        right = mpi.SetEventGroupFilter(id, EG_CALL_GRAPH, cg);
        twice = mpi.SetEventGroupFilter(id, EG_CALL_GRAPH, cg2);
        noGroup = mpi.SetEventGroupFilter(id, EG_NONE, cg);
        return MRTE_RESULT_OK;
    });
    EXPECT_EQ(wrongGroup, MRTE_ERROR_ILLEGAL_ARGUMENT);
    EXPECT_EQ(right, MRTE_RESULT_OK);
    EXPECT_EQ(twice, MRTE_ERROR_ILLEGAL_ARGUMENT);
    EXPECT_EQ(noGroup, MRTE_ERROR_NOT_SUPPORTED);
}

TEST(Registration, SetEventGroupFilterOutsideInstantiateIsPhaseFailure) {
    FakeProvider provider;
    Core core(provider);
    TId id = AddClient(core, "c", [](IMpi &, TId) { return MRTE_RESULT_OK; }).clientId;
    CallGraphFilterAll cg;
    EXPECT_EQ(core.Mpi().SetEventGroupFilter(id, EG_CALL_GRAPH, cg), MRTE_ERROR_PHASE_FAILURE);
}

TEST(Registration, FailedInstantiateLeavesNoRegistrations) {
    FakeProvider provider;
    Core core(provider);
    EnterRecorder failed, good;
    testing::internal::CaptureStderr();
    auto bad = AddClient(core, "quitter", [&](IMpi &mpi, TId id) {
        mpi.RegisterEvent(id, failed);
        return MRTE_ERROR_FAIL;
    });
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(bad.ok());
    EXPECT_NE(bad.error.find("quitter"), std::string::npos);
    EXPECT_NE(bad.error.find("MRTE_ERROR_FAIL"), std::string::npos);
    EXPECT_NE(log.find("client 'quitter' not loaded"), std::string::npos) << log;
    TId goodId = AddObserving(core, "good", {&good});
    EXPECT_NE(goodId, 0u);
    core.FinishInit();
    auto d = Enter(5);
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_TRUE(failed.seen.empty());
    EXPECT_EQ(good.seen.size(), 1u);
}

TEST(Registration, ThrowingInstantiateIsContainedAndNamed) {
    FakeProvider provider;
    Core core(provider);
    testing::internal::CaptureStderr();
    auto r = AddClient(core, "thrower", [](IMpi &, TId) -> TResult { throw std::runtime_error("bad options"); });
    testing::internal::GetCapturedStderr();
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("thrower"), std::string::npos);
    EXPECT_NE(r.error.find("bad options"), std::string::npos);
}

TEST(Registration, ApiVersionIsTheHeaderVersion) {
    FakeProvider provider;
    Core core(provider);
    EXPECT_EQ(core.Mpi().GetApiVersion(), unsigned(MARTINI_MPI_VERSION));
    TId id = AddClient(core, "c", [](IMpi &, TId) { return MRTE_RESULT_OK; }).clientId;
    SRuntimeInfo info;
    ASSERT_EQ(core.Mpi().GetRuntimeInfo(id, &info), MRTE_RESULT_OK);
    EXPECT_STREQ(info.szRuntimeName, "fake");
    EXPECT_EQ(info.uiMpiVersion, unsigned(MARTINI_MPI_VERSION));
    EXPECT_EQ(core.Mpi().GetRuntimeInfo(id, nullptr), MRTE_ERROR_NULL_PTR);
}

TEST(Registration, SamplingRateHighestWinsAndTheFirstClockHolds) {
    FakeProvider provider;
    Core core(provider);
    TId a = AddClient(core, "a", [](IMpi &, TId) { return MRTE_RESULT_OK; }).clientId;
    TId b = AddClient(core, "b", [](IMpi &, TId) { return MRTE_RESULT_OK; }).clientId;
    IMpi &mpi = core.Mpi();
    EXPECT_EQ(mpi.SetSamplingRate(a, 0, SC_CPU), MRTE_ERROR_ILLEGAL_ARGUMENT);
    EXPECT_EQ(mpi.SetSamplingRate(a, kMaxSamplingHz + 1, SC_CPU), MRTE_ERROR_ILLEGAL_ARGUMENT);
    EXPECT_EQ(mpi.SetSamplingRate(a, 100, static_cast<ESamplingClock>(7)), MRTE_ERROR_ILLEGAL_ARGUMENT);
    EXPECT_EQ(mpi.SetSamplingRate(99, 100, SC_CPU), MRTE_ERROR_ILLEGAL_ID);
    EXPECT_EQ(mpi.SetSamplingRate(a, 100, SC_WALL), MRTE_RESULT_OK);
    EXPECT_EQ(mpi.SetSamplingRate(b, 50, SC_WALL), MRTE_RESULT_OK);    // lower: the provider is not asked
    EXPECT_EQ(mpi.SetSamplingRate(b, 1000, SC_WALL), MRTE_RESULT_OK);  // higher: passed on
    EXPECT_EQ(mpi.SetSamplingRate(b, 2000, SC_CPU), MRTE_ERROR_NOT_SUPPORTED);  // the first clock holds
    const std::vector<std::pair<unsigned, bool>> expected{{100, true}, {1000, true}};
    EXPECT_EQ(provider.samplingRates, expected);
}

TEST(Registration, ObserverDefaultDataTypesAreEverythingTheEventSupports) {
    class DefaultEnter : public IMethodEnterEventObserver {
    public:
        void HandleEvent(SMethodEnterEventData &) override {}
    } observer;
    EXPECT_EQ(observer.EventDataTypes(), IMethodEnterEventObserver::kSupportedData);
    EXPECT_EQ(observer.Type(), EV_METHOD_ENTER);
    FakeProvider provider;
    Core core(provider);
    AddObserving(core, "c", {&observer});
    core.FinishInit();
    EXPECT_EQ(core.RequestedData(EV_METHOD_ENTER), IMethodEnterEventObserver::kSupportedData);
}

}  // namespace
}  // namespace martini::test

namespace martini::test {
namespace {

// Every IMpi function promises never to throw: the promise is in its type, so a client
// may call it from a noexcept handler and an override that could throw does not build.
#define MARTINI_EXPECT_NOEXCEPT(call) static_assert(noexcept(std::declval<IMpi &>().call), #call " may throw")
MARTINI_EXPECT_NOEXCEPT(RegisterEvent(0, std::declval<IEventObserver &>()));
MARTINI_EXPECT_NOEXCEPT(SetEventGroupFilter(0, EG_HEAP, std::declval<IEventFilter &>()));
MARTINI_EXPECT_NOEXCEPT(EnableEventGroup(0, EG_HEAP));
MARTINI_EXPECT_NOEXCEPT(DisableEventGroup(0, EG_HEAP));
MARTINI_EXPECT_NOEXCEPT(GetModuleInfo(0, 0, 0, nullptr));
MARTINI_EXPECT_NOEXCEPT(GetClassInfo(0, 0, 0, nullptr));
MARTINI_EXPECT_NOEXCEPT(GetMethodInfo(0, 0, 0, nullptr));
MARTINI_EXPECT_NOEXCEPT(GetObjectInfo(0, 0, 0, nullptr));
MARTINI_EXPECT_NOEXCEPT(GetThreadInfo(0, 0, 0, nullptr));
MARTINI_EXPECT_NOEXCEPT(GetAllThreadsInfo(0, 0, 0, nullptr));
MARTINI_EXPECT_NOEXCEPT(GetObjectReferences(0, 0, 0, nullptr));
MARTINI_EXPECT_NOEXCEPT(GetCompiledMethodInfo(0, 0, 0, nullptr));
MARTINI_EXPECT_NOEXCEPT(GetCurrentThreadId(0, nullptr));
MARTINI_EXPECT_NOEXCEPT(GetRuntimeInfo(0, nullptr));
MARTINI_EXPECT_NOEXCEPT(SuspendVM(0));
MARTINI_EXPECT_NOEXCEPT(ResumeVM(0));
MARTINI_EXPECT_NOEXCEPT(RunGC(0));
MARTINI_EXPECT_NOEXCEPT(GetApiVersion());
MARTINI_EXPECT_NOEXCEPT(SetAllocationSamplingInterval(0, 0));
MARTINI_EXPECT_NOEXCEPT(SetSamplingRate(0, 0, SC_CPU));
#undef MARTINI_EXPECT_NOEXCEPT

TEST(Registration, EveryEventOfTheCatalogCanBeRegisteredWithoutAllocating) {
    // Registrations live in fixed storage: one per event, for every event at once.
    FakeProvider provider;
    Core core(provider);
    static std::vector<std::unique_ptr<IEventObserver>> observers;
    auto instantiate = [](IMpi *mpi, TId id, const char *) -> TResult {
#define MARTINI_X_REGISTER_DATA(Name)                                                  \
    struct Name##Observer : I##Name##EventObserver {                                   \
        void HandleEvent(S##Name##EventData &) override {}                             \
    };
#define MARTINI_X_REGISTER_NODATA(Name)                                                \
    struct Name##Observer : I##Name##EventObserver {                                   \
        void HandleEvent() override {}                                                 \
    };
#define MARTINI_X_REGISTER(Name, Const, Number, Group, Items, Shape)                   \
    MARTINI_X_REGISTER_##Shape(Name) observers.push_back(std::make_unique<Name##Observer>()); \
    if (mpi->RegisterEvent(id, *observers.back()) != MRTE_RESULT_OK) return MRTE_ERROR_FAIL;
        MARTINI_MPI_EVENTS(MARTINI_X_REGISTER)
#undef MARTINI_X_REGISTER
#undef MARTINI_X_REGISTER_DATA
#undef MARTINI_X_REGISTER_NODATA
        return MRTE_RESULT_OK;
    };
    EXPECT_TRUE(core.AddClient("all", instantiate, "").ok());
}

}  // namespace
}  // namespace martini::test
