// Client loading: every bad library gets one clear message naming it and the cause,
// and the other clients load and run.
#include "test_support.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace martini::test {
namespace {

std::string Lib(const std::string &name) { return std::string(TEST_CLIENT_DIR) + "/lib" + name + ".so"; }

core::ClientSpec Spec(const std::string &name, const std::string &options = "") {
    return {name, Lib(name), options};
}

struct LoadOutcome {
    Core::LoadResult result;
    std::string log;
};

LoadOutcome Load(Core &core, const core::ClientSpec &spec) {
    testing::internal::CaptureStderr();
    LoadOutcome out{core.LoadClient(spec), {}};
    out.log = testing::internal::GetCapturedStderr();
    return out;
}

TEST(Loader, WellFormedClientLoadsAndReceivesEvents) {
    FakeProvider provider;
    Core core(provider);
    auto out = Load(core, Spec("good_client"));
    ASSERT_TRUE(out.result.ok()) << out.result.error;
    EXPECT_EQ(out.log, "");
    core.FinishInit();
    void *h = dlopen(Lib("good_client").c_str(), RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(h, nullptr);
    auto enters = reinterpret_cast<unsigned long long (*)()>(dlsym(h, "test_client_enters"));
    const unsigned long long before = enters();
    auto d = Enter(1);
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_EQ(enters() - before, 1u);
    dlclose(h);
}

TEST(Loader, MissingLibraryFileIsNamedInTheError) {
    FakeProvider provider;
    Core core(provider);
    auto out = Load(core, {"ghost", "/nonexistent/libghost.so", ""});
    EXPECT_FALSE(out.result.ok());
    EXPECT_NE(out.result.error.find("client 'ghost' (/nonexistent/libghost.so) not loaded"), std::string::npos)
        << out.result.error;
    EXPECT_NE(out.result.error.find("No such file"), std::string::npos) << out.result.error;
    EXPECT_NE(out.log.find("the other clients are unaffected"), std::string::npos) << out.log;
}

TEST(Loader, LibraryWithoutTheEntryPointIsRefused) {
    FakeProvider provider;
    Core core(provider);
    auto out = Load(core, Spec("no_entry_client"));
    EXPECT_FALSE(out.result.ok());
    EXPECT_NE(out.result.error.find("no MPICL_Instantiate entry point"), std::string::npos) << out.result.error;
}

TEST(Loader, ClientBuiltForAnotherMajorVersionIsRefusedNamingBothVersions) {
    FakeProvider provider;
    Core core(provider);
    auto out = Load(core, Spec("old_version_client"));
    EXPECT_FALSE(out.result.ok());
    const std::string expected = "built against MPI 1.4 but this Martini implements MPI " +
                                 std::to_string(MARTINI_MPI_VERSION_MAJOR) + "." +
                                 std::to_string(MARTINI_MPI_VERSION_MINOR);
    EXPECT_NE(out.result.error.find(expected), std::string::npos) << out.result.error;
}

TEST(Loader, ClientBuiltForANewerMinorVersionIsRefused) {
    FakeProvider provider;
    Core core(provider);
    auto out = Load(core, Spec("new_minor_client"));
    EXPECT_FALSE(out.result.ok());
    const std::string expected = "built against MPI " + std::to_string(MARTINI_MPI_VERSION_MAJOR) + "." +
                                 std::to_string(MARTINI_MPI_VERSION_MINOR + 1);
    EXPECT_NE(out.result.error.find(expected), std::string::npos) << out.result.error;
}

TEST(Loader, FailedClientIdIsNotValidAfterwards) {
    FakeProvider provider;
    Core core(provider);
    auto good = Load(core, Spec("good_client"));
    auto bad = Load(core, Spec("failing_client"));
    ASSERT_TRUE(good.result.ok());
    ASSERT_FALSE(bad.result.ok());
    EXPECT_EQ(core.ClientCount(), 1u);
    core.FinishInit();
    const TId retired = good.result.clientId + 1;
    EXPECT_EQ(core.Mpi().EnableEventGroup(retired, EG_CALL_GRAPH), MRTE_ERROR_ILLEGAL_ID);
    TId thread = 0;
    EXPECT_EQ(core.Mpi().GetCurrentThreadId(retired, &thread), MRTE_ERROR_ILLEGAL_ID);
}

TEST(Loader, NoClientLoadsAfterFinishInitAndItsLibraryIsNotOpened) {
    FakeProvider provider;
    Core core(provider);
    core.FinishInit();
    auto out = Load(core, Spec("good_client"));
    EXPECT_FALSE(out.result.ok());
    EXPECT_NE(out.result.error.find("before the runtime starts"), std::string::npos) << out.result.error;
}

TEST(Loader, ClientWithoutAVersionStampIsRefused) {
    FakeProvider provider;
    Core core(provider);
    auto out = Load(core, Spec("unstamped_client"));
    EXPECT_FALSE(out.result.ok());
    EXPECT_NE(out.result.error.find("MPICL_MpiVersion is missing"), std::string::npos) << out.result.error;
}

TEST(Loader, FailingInstantiateIsNamedWithItsResult) {
    FakeProvider provider;
    Core core(provider);
    auto out = Load(core, Spec("failing_client"));
    EXPECT_FALSE(out.result.ok());
    EXPECT_NE(out.result.error.find("MPICL_Instantiate returned MRTE_ERROR_ILLEGAL_ARGUMENT"), std::string::npos)
        << out.result.error;
}

TEST(Loader, ThrowingInstantiateIsContainedAndItsMessageKept) {
    FakeProvider provider;
    Core core(provider);
    auto out = Load(core, Spec("throwing_client", "depth=oops"));
    EXPECT_FALSE(out.result.ok());
    EXPECT_NE(out.result.error.find("cannot parse options 'depth=oops'"), std::string::npos) << out.result.error;
}

TEST(Loader, GoodClientLoadsAfterEveryKindOfBadOne) {
    FakeProvider provider;
    Core core(provider);
    for (const char *bad : {"no_entry_client", "old_version_client", "unstamped_client", "failing_client",
                            "throwing_client"}) {
        EXPECT_FALSE(Load(core, Spec(bad)).result.ok()) << bad;
    }
    EXPECT_FALSE(Load(core, {"ghost", "/nonexistent/libghost.so", ""}).result.ok());
    auto good = Load(core, Spec("good_client"));
    ASSERT_TRUE(good.result.ok()) << good.result.error;
    core.FinishInit();
    EXPECT_TRUE(core.IsEnabled(EV_METHOD_ENTER));
}

// One client given twice (`--client callcount=out=A --client callcount=out=B`): each
// instance has its own copy of the library's globals, as if it were alone.
TEST(Loader, OneLibraryLoadedTwiceGivesTwoInstancesWithTheirOwnState) {
    FakeProvider provider;
    Core core(provider);
    auto first = Load(core, Spec("good_client", "a"));
    auto second = Load(core, Spec("good_client", "b"));
    ASSERT_TRUE(first.result.ok()) << first.result.error;
    ASSERT_TRUE(second.result.ok()) << second.result.error;
    EXPECT_EQ(second.log, "");
    core.FinishInit();
    EXPECT_EQ(core.ClientCount(), 2u);
    void *h = dlopen(Lib("good_client").c_str(), RTLD_NOW | RTLD_NOLOAD);  // the first instance's
    ASSERT_NE(h, nullptr);
    auto enters = reinterpret_cast<unsigned long long (*)()>(dlsym(h, "test_client_enters"));
    const unsigned long long before = enters();
    auto d = Enter(1);
    core.Raise<IMethodEnterEventObserver>(d);
    EXPECT_EQ(enters() - before, 1u);  // shared globals: one observer told twice
    dlclose(h);
}

// More clients than a core holds: one line for all that were left out.
TEST(Loader, ClientsOverTheLimitAreRefusedInOneLine) {
    FakeProvider provider;
    Core core(provider);
    std::string config;
    for (unsigned i = 0; i < core::kMaxClients + 50; ++i) config += Lib("good_client") + ";";
    testing::internal::CaptureStderr();
    const core::ClientsLoaded loaded = core::LoadClients(core, config, TEST_CLIENT_DIR);
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(loaded.requested, core::kMaxClients + 50);
    EXPECT_EQ(loaded.loaded, core::kMaxClients);
    std::size_t lines = 0;
    for (std::size_t at = log.find("too many clients"); at != std::string::npos;
         at = log.find("too many clients", at + 1)) {
        ++lines;
    }
    EXPECT_EQ(lines, 1u) << log.substr(0, 2000);
    EXPECT_NE(log.find("50 clients from"), std::string::npos) << log.substr(0, 2000);
}

}  // namespace
}  // namespace martini::test
