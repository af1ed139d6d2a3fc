// The one client-loading path every provider and tool uses: the text and file forms of
// the configuration, where bundled clients are found, and loading with bad entries.
#include "test_support.h"

#include "martini/core/client_spec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace martini::test {
namespace {

namespace fs = std::filesystem;

struct TempDir {
    fs::path path;
    TempDir() {
        char pattern[] = "/tmp/martini-config-test-XXXXXX";
        path = ::mkdtemp(pattern);
    }
    ~TempDir() { fs::remove_all(path); }
    std::string Write(const std::string &name, const std::string &text) const {
        std::ofstream(path / name) << text;
        return (path / name).string();
    }
};

std::string ReadError(const std::string &text) {
    core::ClientConfig config;
    return core::ReadClientConfig(text, config);
}

TEST(ClientConfig, FileFormGivesTheSameClientsAsTheTextFormAndTheOutputDirectory) {
    TempDir dir;
    const std::string file = dir.Write(
        "c.json", R"({"clients": [{"client": "cgprof", "options": "counts;x"}, {"client": "/x/libm.so"}],
                     "output": "out"})");
    core::ClientConfig config;
    ASSERT_EQ(core::ReadClientConfig("@" + file, config), "");
    ASSERT_EQ(config.clients.size(), 2u);
    EXPECT_EQ(config.clients[0].name, "cgprof");
    EXPECT_EQ(config.clients[0].options, "counts;x");
    EXPECT_EQ(config.clients[1].name, "/x/libm.so");
    EXPECT_EQ(config.clients[1].options, "");
    EXPECT_EQ(config.outputDirectory, "out");
}

TEST(ClientConfig, WrittenFileFormReadsBackUnchanged) {
    TempDir dir;
    core::ClientConfig written;
    written.clients = {{"cgprof", "/lib/libcgprof.so", "top=5;counts"}, {"callcount", "", ""}};
    written.outputDirectory = "/tmp/out dir";
    const std::string file = dir.Write("w.json", core::ClientConfigJson(written));
    core::ClientConfig read;
    ASSERT_EQ(core::ReadClientConfig("@" + file, read), "");
    ASSERT_EQ(read.clients.size(), 2u);
    EXPECT_EQ(read.clients[0].name, "/lib/libcgprof.so");  // by resolved path
    EXPECT_EQ(read.clients[0].options, "top=5;counts");
    EXPECT_EQ(read.clients[1].name, "callcount");
    EXPECT_EQ(read.outputDirectory, "/tmp/out dir");
}

TEST(ClientConfig, DirectoryInPlaceOfTheFileIsOneMessageNotAnException) {
    TempDir dir;
    const std::string error = ReadError("@" + dir.path.string());
    EXPECT_NE(error.find("is a directory"), std::string::npos) << error;
    EXPECT_NE(error.find(dir.path.string()), std::string::npos) << error;
    EXPECT_NE(ReadError("@.").find("is a directory"), std::string::npos);
}

TEST(ClientConfig, EveryBadFileIsNamedWithItsProblem) {
    TempDir dir;
    EXPECT_NE(ReadError("@/nonexistent/c.json").find("cannot read the configuration file '/nonexistent/c.json'"),
              std::string::npos);
    EXPECT_NE(ReadError("@" + dir.Write("a", "{\"clients\": [")).find("not valid JSON"), std::string::npos);
    EXPECT_NE(ReadError("@" + dir.Write("b", "[1]")).find("expected an object"), std::string::npos);
    EXPECT_NE(ReadError("@" + dir.Write("c", R"({"clients": [], "extra": 1})")).find("unknown field \"extra\""),
              std::string::npos);
    EXPECT_NE(ReadError("@" + dir.Write("d", R"({"clients": [{"options": "x"}]})")).find("clients[0] needs"),
              std::string::npos);
    EXPECT_NE(ReadError("@" + dir.Write("e", R"({"clients": [{"client": "a", "options": 3}]})"))
                  .find("\"options\" must be a string"),
              std::string::npos);
    EXPECT_NE(ReadError("@" + dir.Write("f", R"({"clients": {}})")).find("\"clients\" must be an array"),
              std::string::npos);
    EXPECT_NE(ReadError("@" + dir.Write("g", R"({"clients": [], "output": ""})")).find("\"output\""),
              std::string::npos);
    EXPECT_NE(ReadError("=counts").find("no client name"), std::string::npos);
}

TEST(ClientConfig, SearchDirsCoverTheInstalledLayoutFromEveryAnchorThenTheBuildTree) {
    const auto dirs = core::ClientSearchDirs("/opt/m/bin", "/first:/second");
    ASSERT_GE(dirs.size(), 4u);
    EXPECT_EQ(dirs[0], "/first");  // the given search path replaces $MARTINI_CLIENT_PATH
    EXPECT_EQ(dirs[1], "/second");
    auto has = [&](const std::string &d) { return std::find(dirs.begin(), dirs.end(), d) != dirs.end(); };
    EXPECT_TRUE(has("/opt/m/bin/clients"));          // anchor <libdir>/martini (the JVM agent)
    EXPECT_TRUE(has("/opt/m/bin/martini/clients"));  // anchor <libdir> (libmartini-interp)
    EXPECT_TRUE(has("/opt/m/bin/" MARTINI_BINDIR_TO_LIBDIR "/martini/clients"));  // anchor <bindir>
    EXPECT_TRUE(has("/opt/m/bin/../clients"));       // build/tools -> build/clients
}

TEST(ClientConfig, EnvironmentSearchPathComesFirstWhenNoneIsGiven) {
    ::setenv("MARTINI_CLIENT_PATH", "/env/a::/env/b", 1);
    const auto dirs = core::ClientSearchDirs("/anchor");
    ::unsetenv("MARTINI_CLIENT_PATH");
    ASSERT_GE(dirs.size(), 2u);
    EXPECT_EQ(dirs[0], "/env/a");
    EXPECT_EQ(dirs[1], "/env/b");
}

TEST(ClientConfig, LoadClientsLoadsTheGoodOnesAndNamesEachBadOne) {
    FakeProvider provider;
    Core core(provider);
    testing::internal::CaptureStderr();
    const core::ClientsLoaded loaded =
        core::LoadClients(core, "good_client;ghost;failing_client", "/nonexistent", TEST_CLIENT_DIR);
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(loaded.error, "");
    EXPECT_EQ(loaded.requested, 3u);
    EXPECT_EQ(loaded.loaded, 1u);
    EXPECT_NE(log.find("client 'ghost' not found"), std::string::npos) << log;
    EXPECT_NE(log.find("client 'failing_client'"), std::string::npos) << log;
    core.FinishInit();
    EXPECT_TRUE(core.IsEnabled(EV_METHOD_ENTER));
}

TEST(ClientConfig, LoadClientsWithAnUnreadableConfigurationLoadsNothing) {
    FakeProvider provider;
    Core core(provider);
    const core::ClientsLoaded loaded = core::LoadClients(core, "@.", "/nonexistent", TEST_CLIENT_DIR);
    EXPECT_NE(loaded.error.find("is a directory"), std::string::npos) << loaded.error;
    EXPECT_EQ(loaded.loaded, 0u);
}

}  // namespace
}  // namespace martini::test
