#include "martini/core/client_spec.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace martini::core {
namespace {

TEST(ClientSpec, ClientsAreSeparatedBySemicolonsAndOptionsFollowTheFirstEquals) {
    std::vector<ClientSpec> specs;
    ASSERT_EQ(ParseClientList("cgprof=mode=time,top=5;/opt/x/libmine.so;heapprof", specs), "");
    ASSERT_EQ(specs.size(), 3u);
    EXPECT_EQ(specs[0].name, "cgprof");
    EXPECT_EQ(specs[0].options, "mode=time,top=5");
    EXPECT_EQ(specs[1].name, "/opt/x/libmine.so");
    EXPECT_EQ(specs[1].options, "");
    EXPECT_EQ(specs[2].name, "heapprof");
}

TEST(ClientSpec, EscapedSemicolonIsPartOfTheOptions) {
    std::vector<ClientSpec> specs;
    ASSERT_EQ(ParseClientList(R"(a=x\;y;b=c:\\d)", specs), "");
    ASSERT_EQ(specs.size(), 2u);
    EXPECT_EQ(specs[0].options, "x;y");
    EXPECT_EQ(specs[1].options, R"(c:\d)");
}

TEST(ClientSpec, EmptyEntriesAreIgnored) {
    std::vector<ClientSpec> specs;
    ASSERT_EQ(ParseClientList(";;a;;", specs), "");
    ASSERT_EQ(specs.size(), 1u);
}

TEST(ClientSpec, OptionsWithoutAClientNameAreAnErrorNamingThePosition) {
    std::vector<ClientSpec> specs;
    const std::string err = ParseClientList("a;=top=3", specs);
    EXPECT_NE(err.find("position 3"), std::string::npos) << err;
    EXPECT_NE(err.find("no client name"), std::string::npos) << err;
}

TEST(ClientSpec, PathsAreUsedAsTheyAre) {
    ClientSpec spec{"./libx.so", "", ""};
    EXPECT_EQ(ResolveClientPath(spec, {}), "");
    EXPECT_EQ(spec.path, "./libx.so");
}

TEST(ClientSpec, BareLibraryFileNameInTheCurrentDirectoryGetsADotSlash) {
    const auto dir = std::filesystem::temp_directory_path() / "martini-client-spec-cwd";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "libhere.so") << "x";
    const auto old = std::filesystem::current_path();
    std::filesystem::current_path(dir);
    ClientSpec here{"libhere.so", "", ""};
    EXPECT_EQ(ResolveClientPath(here, {}), "");
    EXPECT_EQ(here.path, "./libhere.so") << "dlopen would search the library path instead";
    ClientSpec system{"libsystemwide.so", "", ""};
    EXPECT_EQ(ResolveClientPath(system, {}), "");
    EXPECT_EQ(system.path, "libsystemwide.so");
    std::filesystem::current_path(old);
    std::filesystem::remove_all(dir);
}

TEST(ClientSpec, BundledNamesAreFoundInTheSearchDirectories) {
    const auto dir = std::filesystem::temp_directory_path() / "martini-client-spec-test";
    std::filesystem::create_directories(dir / "mine");
    std::ofstream(dir / "mine" / "libmine.so") << "x";
    ClientSpec spec{"mine", "", ""};
    EXPECT_EQ(ResolveClientPath(spec, {"/nonexistent", dir.string()}), "");
    EXPECT_EQ(spec.path, (dir / "mine" / "libmine.so").string());
    ClientSpec missing{"nosuch", "", ""};
    const std::string err = ResolveClientPath(missing, {dir.string()});
    EXPECT_NE(err.find("client 'nosuch' not found"), std::string::npos) << err;
    EXPECT_NE(err.find("libnosuch.so"), std::string::npos) << err;
    std::filesystem::remove_all(dir);
}

TEST(ClientSpec, SearchPathIsSplitAtColonsWithEmptyEntriesLeftOut) {
    EXPECT_EQ(SplitSearchPath("/a:/b/c::/d:"), (std::vector<std::string>{"/a", "/b/c", "/d"}));
    EXPECT_TRUE(SplitSearchPath("").empty());
    EXPECT_EQ(SplitSearchPath("rel"), (std::vector<std::string>{"rel"}));
}

}  // namespace
}  // namespace martini::core
