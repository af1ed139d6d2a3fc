// The bundled clients' options checked before a program starts (tools/common.h,
// CheckClientOptions, through each client's MPICL_CheckOptions): a typo is named with
// the option meant, a bad value with its problem, good options pass, and every option
// name a client knows is accepted by its parser. The clients are found through
// $MARTINI_CLIENT_PATH (the build's clients/); NO_CHECK_CLIENT is a library without the
// export.
#include "common.h"
#include "martini/clients/option_names.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tools = martini::tools;
namespace clients = martini::clients;

namespace {

// CheckClientOptions for --client values, resolved as `martini run` resolves them.
std::string Check(const std::vector<std::string> &values) {
    std::vector<martini::core::ClientSpec> specs;
    if (std::string e = tools::ParseClients(values, specs); !e.empty()) return "parse: " + e;
    if (std::string e = tools::ResolveClients(specs); !e.empty()) return "resolve: " + e;
    return tools::CheckClientOptions(specs);
}

struct Typo {
    const char *client, *option, *meant;
};

TEST(CheckClientOptions, EachBundledClientNamesATypoAndTheOptionMeant) {
    for (const Typo &t : {Typo{"cgprof", "tpo=5", "top"}, Typo{"cgprof", "count", "counts"},
                          Typo{"cgprof", "formtas=json", "formats"}, Typo{"heapprof", "intervl=4096", "interval"},
                          Typo{"heapprof", "nolvie", "nolive"}, Typo{"threadprof", "slcies=10", "slices"},
                          Typo{"callcount", "inclde=com.", "include"}, Typo{"conformance", "reprot=v.jsonl", "report"},
                          Typo{"coverage", "formtas=lcov", "formats"}, Typo{"coverage", "exlude=java.", "exclude"}}) {
        const std::string option = t.option;
        const std::string key = option.substr(0, option.find('='));
        EXPECT_EQ(Check({std::string(t.client) + "=" + option}),
                  "client '" + std::string(t.client) + "': unknown option '" + key + "' (did you mean '" + t.meant + "'?)");
    }
}

// Good options of each client, every name it knows among them.
const std::map<std::string, std::vector<std::string>> kGood = {
    {"cgprof",
     {"", "counts,top=5,include=a.*,exclude=b.*,depth=10,nodes=100,trace=5,paused,lines,formats=json+pprof,name=x,"
          "out=/tmp/x-%p",
      "time,cpu,filter=+a.*", "sample=50,wall,top=0", "sample"}},
    {"heapprof", {"", "exact,interval=100,depth=5,nolive,top=3,out=d,formats=json,name=h,include=a", "sampled,filter=+a"}},
    {"threadprof", {"", "filter=+a,slices=5,top=1,out=d,formats=json,name=t"}},
    {"callcount", {"", "top=3,out=f.txt,include=com.,time", "counters,include=com."}},
    {"conformance", {"", "report=f.jsonl,max=5"}},
    {"coverage", {"", "include=com.acme.,exclude=com.acme.gen.,all,formats=lcov+xml+html,sources=src:lib,top=5",
                  "formats=none", "out=/tmp/cov-%p.info,formats=lcov"}},
};

// The names a client knows, from its own message for a name far from all of them.
std::set<std::string> KnownNames(const std::string &client) {
    const std::string message = Check({client + "=zzzzzzzzzz"});
    const std::string lead = "(known: ";
    const std::size_t at = message.find(lead);
    std::set<std::string> names;
    if (at == std::string::npos || message.back() != ')') return names;
    std::stringstream list(message.substr(at + lead.size(), message.size() - at - lead.size() - 1));
    for (std::string name; std::getline(list, name, ',');) names.insert(name.substr(name.find_first_not_of(' ')));
    return names;
}

// The option names of a client's table in docs/configuration.md ("### client", rows
// "| `name=...` | ... |").
std::set<std::string> DocumentedNames(const std::string &client) {
    std::ifstream page(std::string(SOURCE_ROOT) + "/docs/configuration.md");
    std::set<std::string> names;
    bool in = false;
    for (std::string line; std::getline(page, line);) {
        if (line.rfind("#", 0) == 0) in = line == "### " + client;
        if (!in || line.rfind("| `", 0) != 0) continue;
        const std::string cell = line.substr(3, line.find('`', 3) - 3);
        names.insert(cell.substr(0, cell.find_first_of("=[")));
    }
    return names;
}

TEST(CheckClientOptions, GoodOptionsPass) {
    for (const auto &[client, values] : kGood) {
        for (const std::string &options : values) {
            EXPECT_EQ(Check({options.empty() ? client : client + "=" + options}), "") << client << "=" << options;
        }
    }
    EXPECT_EQ(Check({"callcount", "cgprof=counts;heapprof=exact"}), "");
}

TEST(CheckClientOptions, EveryNameIsAcceptedAndDocumented) {
    for (const auto &[client, values] : kGood) {
        const std::set<std::string> known = KnownNames(client);
        EXPECT_GE(known.size(), 2u) << client;
        std::set<std::string> used;
        for (const std::string &options : values) {
            std::stringstream items(options);
            for (std::string item; std::getline(items, item, ',');) used.insert(item.substr(0, item.find('=')));
        }
        used.erase("");
        EXPECT_EQ(used, known) << client << ": the good options above should use every name it knows";
        EXPECT_EQ(DocumentedNames(client), known) << client << ": docs/configuration.md's table";
    }
}

TEST(CheckClientOptions, BadValuesAndFarMissesAreNamed) {
    EXPECT_EQ(Check({"cgprof=top=x"}), "client 'cgprof': option 'top': 'x' is not a count");
    EXPECT_EQ(Check({"cgprof=counts,cpu"}), "client 'cgprof': option 'cpu' needs time mode (drop 'counts')");
    EXPECT_EQ(Check({"heapprof=interval=0"}),
              "client 'heapprof': option 'interval': between 1 and 2147483647 bytes (exact: every allocation)");
    EXPECT_EQ(Check({"callcount=top=0"}), "client 'callcount': option top=0: expected a positive number");
    EXPECT_EQ(Check({"callcount=colour=red"}),
              "client 'callcount': unknown option 'colour' (known: top, out, include, time, counters)");
    EXPECT_EQ(Check({"callcount=counters,time"}),
              "client 'callcount': options 'counters' and 'time' exclude each other: the counters have no times");
    EXPECT_EQ(Check({"coverage=formats=pdf"}),
              "client 'coverage': option 'formats': unknown format 'pdf' (lcov, xml, html, joined by '+'; or none)");
    EXPECT_EQ(Check({"coverage=top=x"}), "client 'coverage': option 'top': 'x' is not a count");
    EXPECT_EQ(Check({"coverage=all=1"}), "client 'coverage': option 'all' takes no value");
    EXPECT_EQ(Check({"coverage=colour=red"}),
              "client 'coverage': unknown option 'colour' (known: include, exclude, all, formats, sources, out, top)");
    EXPECT_EQ(Check({"conformance=max=x"}), "client 'conformance': option 'max': 'x' is not a count");
    EXPECT_EQ(Check({"threadprof=sample"}).rfind("client 'threadprof': cannot use samples (SampleHit)", 0), 0u);
}

TEST(CheckClientOptions, TheFirstBadClientIsNamed) {
    EXPECT_EQ(Check({"callcount=top=3", "heapprof=exat", "cgprof=tpo=1"}),
              "client 'heapprof': unknown option 'exat' (did you mean 'exact'?)");
}

TEST(CheckClientOptions, HelpGivesTheUsage) {
    const std::string help = Check({"cgprof=help"});
    EXPECT_EQ(help.rfind("client 'cgprof': cgprof options (comma-separated):\n", 0), 0u) << help;
    EXPECT_NE(help.find("  top=N"), std::string::npos) << help;
}

TEST(CheckClientOptions, ClientsWithoutTheExportAreLeftToTheRuntime) {
    EXPECT_EQ(Check({std::string(NO_CHECK_CLIENT) + "=anything at all"}), "");
    EXPECT_EQ(Check({std::string(NO_CHECK_CLIENT) + "=x", "cgprof=tpo=5"}),
              "client 'cgprof': unknown option 'tpo' (did you mean 'top'?)");
}

// ---- the shared helper (martini/clients/option_names.h) ---------------------------------

TEST(OptionNames, DamerauLevenshteinDistance) {
    EXPECT_EQ(clients::EditDistance("top", "top"), 0u);
    EXPECT_EQ(clients::EditDistance("tpo", "top"), 1u);      // a swap is one edit
    EXPECT_EQ(clients::EditDistance("formtas", "formats"), 1u);
    EXPECT_EQ(clients::EditDistance("to", "top"), 1u);
    EXPECT_EQ(clients::EditDistance("tops", "top"), 1u);
    EXPECT_EQ(clients::EditDistance("tap", "top"), 1u);
    EXPECT_EQ(clients::EditDistance("ca", "abc"), 3u);       // the optimal string alignment form
    EXPECT_EQ(clients::EditDistance("", "abc"), 3u);
    EXPECT_EQ(clients::EditDistance("kitten", "sitting"), 3u);
}

TEST(OptionNames, NearMissesOnly) {
    constexpr const char *names[] = {"top", "out", "include", "time", "interval"};
    EXPECT_EQ(clients::NearestName("tpo", names), "top");
    EXPECT_EQ(clients::NearestName("incldue", names), "include");
    EXPECT_EQ(clients::NearestName("inteval", names), "interval");
    EXPECT_EQ(clients::NearestName("x", names), "");       // not taken for "out"
    EXPECT_EQ(clients::NearestName("colour", names), "");
    EXPECT_EQ(clients::UnknownOption("tmie", names), "unknown option 'tmie' (did you mean 'time'?)");
    EXPECT_EQ(clients::CheckOptionName("time", names), "");
    EXPECT_EQ(clients::CheckOptionName("zzz", names),
              "unknown option 'zzz' (known: top, out, include, time, interval)");
}

}  // namespace
