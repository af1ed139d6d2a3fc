// The report library's writers: top tables of every profile kind, collapsed stacks
// under recursion, the Chrome trace's cut note, pprof's period and lines, overload
// names, unnamed threads, the streamed JSON.
#include "martini/report/profile.h"

#include "profile.pb.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace report = martini::report;
using nlohmann::json;

namespace {

// Adds the path of frame indexes under the tree's root (created as needed) and
// returns its leaf.
std::uint32_t AddPath(report::Profile &p, report::Tree &tree, const std::vector<std::uint32_t> &path) {
    std::uint32_t at = 0;
    for (std::uint32_t f : path) at = tree.ChildOf(at, f, p.metrics.size());
    return at;
}

report::Frame MethodFrame(const std::string &cls, const std::string &method, const std::string &sig = "", int line = 0) {
    report::Frame f;
    f.name = cls + "." + method;
    f.className = cls;
    f.method = method;
    f.signature = sig;
    f.file = "X.java";
    f.line = line;
    return f;
}

report::Tree &NewThread(report::Profile &p, std::uint64_t id, const std::string &name) {
    report::Tree t;
    t.threadId = id;
    t.threadName = name;
    t.Clear(p.metrics.size());
    p.threads.push_back(std::move(t));
    return p.threads.back();
}

std::vector<std::string> Lines(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The table's header row and first data row; checks every column of the header ends
// where the same column of each data row ends (right-aligned numbers) and that the
// header's words are at least two spaces apart.
void ExpectAligned(const std::string &table, const std::vector<std::string> &headers) {
    const auto lines = Lines(table);
    ASSERT_GE(lines.size(), 3u) << table;
    const std::string &header = lines[1];
    std::size_t from = 0;
    std::vector<std::size_t> ends;
    for (const std::string &h : headers) {
        const std::size_t at = header.find(h, from);
        ASSERT_NE(at, std::string::npos) << "no column '" << h << "' in: " << header;
        if (!ends.empty()) {
            EXPECT_GE(at, ends.back() + 2) << "columns run together in: " << header;
        }
        ends.push_back(at + h.size());
        from = at + h.size();
    }
    for (std::size_t row = 2; row < lines.size() && lines[row].rfind("  ", 0) != 0; ++row) {
        EXPECT_EQ(lines[row].size(), header.size()) << "row " << row << " not aligned:\n" << table;
    }
}

report::Profile HeapProfile() {
    report::Profile p;
    p.tool = "heapprof";
    p.metrics = {{"alloc_objects", "count"}, {"alloc_space", "bytes"}};
    p.defaultMetric = 1;
    p.frames = {MethodFrame("shop.Shop", "main"), MethodFrame("shop.Cart", "add")};
    report::Tree &t = NewThread(p, 1, "main");
    t.nodes[AddPath(p, t, {0})].self = {2, 440};
    t.nodes[AddPath(p, t, {0, 1})].self = {30, 6000};
    p.Merge();
    return p;
}

TEST(TopTable, HeapProfileColumnsAndTotalInBytes) {
    report::Profile p = HeapProfile();
    std::ostringstream out;
    report::WriteTopTable(p, out, 10);
    const std::string table = out.str();
    EXPECT_NE(table.find("alloc_space in all: 6440 B)"), std::string::npos) << table;
    EXPECT_EQ(table.find("alloc_spacetotal"), std::string::npos) << table;
    ExpectAligned(table, {"method", "self %", "total %", "self B", "total B"});
    EXPECT_NE(table.find("shop.Cart.add"), std::string::npos);
}

TEST(TopTable, HeapProfileInKibibytesWhenLarger) {
    report::Profile p = HeapProfile();
    p.threads[0].nodes[2].self = {30, 2 * 1024 * 1024};
    p.Merge();
    std::ostringstream out;
    report::WriteTopTable(p, out, 10);
    EXPECT_NE(out.str().find("KiB)"), std::string::npos) << out.str();
    ExpectAligned(out.str(), {"method", "self %", "total %", "self KiB", "total KiB"});
}

TEST(TopTable, CgprofCountsAndTime) {
    report::Profile p;
    p.tool = "cgprof";
    p.metrics = {{"calls", "count"}};
    p.frames = {MethodFrame("a.A", "main"), MethodFrame("a.A", "aVeryLongMethodNameIndeed")};
    report::Tree &t = NewThread(p, 1, "main");
    t.nodes[AddPath(p, t, {0})].self = {1};
    t.nodes[AddPath(p, t, {0, 1})].self = {123456789};
    p.Merge();
    std::ostringstream counts;
    report::WriteTopTable(p, counts, 10);
    EXPECT_NE(counts.str().find("calls in all: 123456790)"), std::string::npos) << counts.str();
    ExpectAligned(counts.str(), {"method", "calls", "self %", "total %"});

    p.metrics.push_back({"wall", "nanoseconds"});
    p.defaultMetric = 1;
    p.threads[0].nodes[1].self = {1, 5'000'000};
    p.threads[0].nodes[2].self = {3, 20'000'000};
    p.Merge();
    std::ostringstream time;
    report::WriteTopTable(p, time, 10);
    EXPECT_NE(time.str().find("wall in all: 25.0 ms)"), std::string::npos) << time.str();
    ExpectAligned(time.str(), {"method", "calls", "self %", "total %", "self ms", "total ms"});
}

TEST(TopTable, ThreadprofBlockedTime) {
    report::Profile p;
    p.tool = "threadprof";
    p.metrics = {{"blocked", "nanoseconds"}, {"contentions", "count"}, {"waiting", "nanoseconds"}, {"waits", "count"}};
    p.frames.resize(2);
    p.frames[0].name = "blocked";
    p.frames[1].name = "bank.Account";
    report::Tree &t = NewThread(p, 7, "teller-1");
    t.nodes[AddPath(p, t, {0, 1})].self = {3'000'000, 4, 0, 0};
    p.Merge();
    std::ostringstream out;
    report::WriteTopTable(p, out, 10);
    EXPECT_NE(out.str().find("blocked in all: 3000.0 us)"), std::string::npos) << out.str();
    ExpectAligned(out.str(), {"method", "self %", "total %", "self us", "total us"});
    std::ostringstream byCount;
    report::WriteTopTable(p, byCount, 10, 1);
    EXPECT_NE(byCount.str().find("contentions in all: 4)"), std::string::npos) << byCount.str();
    ExpectAligned(byCount.str(), {"method", "self %", "total %", "self contentions", "total contentions"});
}

// Two threads: "busy" in a.A.work (300 ms), "idle" in a.A.idle (1 s).
report::Profile BusyAndIdle() {
    report::Profile p;
    p.tool = "cgprof";
    p.metrics = {{"calls", "count"}, {"wall", "nanoseconds"}};
    p.defaultMetric = 1;
    p.frames = {MethodFrame("a.A", "work"), MethodFrame("a.A", "idle")};
    NewThread(p, 1, "busy");
    p.threads[0].nodes[AddPath(p, p.threads[0], {0})].self = {1, 300'000'000};
    NewThread(p, 2, "idle");
    p.threads[1].nodes[AddPath(p, p.threads[1], {1})].self = {1, 1'000'000'000};
    p.Merge();
    return p;
}

TEST(TopTable, OverSomeThreadsSaysWhichAndLeavesTheOthersOut) {
    const report::Profile p = BusyAndIdle();
    std::ostringstream all;
    report::WriteTopTable(p, all, 10);
    EXPECT_NE(all.str().find("top 2 of 2 methods by self wall (2 threads; wall in all: 1300.0 ms)"), std::string::npos)
        << all.str();

    report::TableThreads busy{{1}, "those that used CPU", "left out: 1 thread that mostly waited (idle)"};
    std::ostringstream some;
    report::WriteTopTable(p, some, 10, -1, busy);
    const auto lines = Lines(some.str());
    ASSERT_GE(lines.size(), 4u) << some.str();
    EXPECT_EQ(lines[0], "cgprof: top 1 of 1 methods by self wall (1 of 2 threads: those that used CPU; wall in all: 300.0 ms)");
    EXPECT_EQ(lines[1], "  left out: 1 thread that mostly waited (idle)");
    EXPECT_EQ(lines[2].rfind("method", 0), 0u) << some.str();
    EXPECT_EQ(lines[3].rfind("a.A.work ", 0), 0u) << some.str();
    EXPECT_NE(lines[3].find("100.0%"), std::string::npos) << some.str();
    EXPECT_EQ(some.str().find("a.A.idle"), std::string::npos) << some.str();
    // The profile itself is left as it was.
    EXPECT_EQ(p.merged.nodes.size(), 3u);
}

// ---- Collapsed stacks under recursion -------------------------------------------

report::Profile CountsProfile(std::size_t frames) {
    report::Profile p;
    p.tool = "cgprof";
    p.metrics = {{"calls", "count"}};
    for (std::size_t i = 0; i < frames; ++i) {
        std::string method = std::to_string(i);  // not "m" + ...: a false -Wrestrict at -O3 (GCC bug 105651)
        method.insert(method.begin(), 'm');
        p.frames.push_back(MethodFrame("r.R", method));
    }
    NewThread(p, 1, "main");
    return p;
}

// One path of `depth` distinct methods m0;m1;...;m(depth-1), one call each.
report::Profile Chain(std::uint32_t depth) {
    report::Profile p = CountsProfile(depth);
    report::Tree &t = p.threads[0];
    std::uint32_t at = 0;
    for (std::uint32_t i = 0; i < depth; ++i) {
        at = t.Add(at, i, 1);
        t.nodes[at].self = {1};
    }
    p.Merge();
    return p;
}

TEST(Collapsed, DirectRecursionFoldsToOneFrame) {
    report::Profile p = CountsProfile(3);
    report::Tree &t = p.threads[0];
    std::uint32_t at = t.ChildOf(0, 0, 1);  // m0
    t.nodes[at].self = {1};
    for (int i = 0; i < 5000; ++i) {  // m0;m1;m1;m1...;m1 (each 1 call), a leaf m2 at the bottom
        at = t.Add(at, 1, 1);
        t.nodes[at].self = {1};
    }
    t.nodes[t.Add(at, 2, 1)].self = {7};
    p.Merge();
    std::ostringstream out;
    const report::CollapsedStats stats = report::WriteCollapsed(p, out, 0, 0.0);
    EXPECT_EQ(out.str(), "r.R.m0 1\nr.R.m0;r.R.m1 5000\nr.R.m0;r.R.m1;r.R.m2 7\n");
    EXPECT_EQ(stats.foldedContexts, 4999u);
    EXPECT_EQ(stats.cutContexts, 0u);
    EXPECT_NE(stats.Note().find("recursion folded (4999 calling contexts"), std::string::npos) << stats.Note();
}

TEST(Collapsed, CyclesOfTwoFoldAndValuesAddUp) {
    report::Profile p = CountsProfile(2);
    report::Tree &t = p.threads[0];
    std::uint32_t at = 0;
    for (int i = 0; i < 3000; ++i) {  // m0;m1;m0;m1;...
        at = t.Add(at, i % 2, 1);
        t.nodes[at].self = {1};
    }
    p.Merge();
    std::ostringstream out;
    const report::CollapsedStats stats = report::WriteCollapsed(p, out, 0, 0.0);
    // The first repetition's leading frame stays (a cycle folds once it repeated
    // whole); every deeper activation lands on one of these three contexts.
    EXPECT_EQ(out.str(), "r.R.m0 1\nr.R.m0;r.R.m1 1500\nr.R.m0;r.R.m1;r.R.m0 1499\n");
    EXPECT_GT(stats.foldedContexts, 0u);
}

TEST(Collapsed, DeepPathsWithoutCyclesEndInOneCutFrame) {
    report::Profile p = Chain(700);
    std::ostringstream out;
    const report::CollapsedStats stats = report::WriteCollapsed(p, out, 0, 0.0, 512);
    const auto lines = Lines(out.str());
    ASSERT_EQ(lines.size(), 700u);  // 512 above the cap, one per method below it
    EXPECT_EQ(stats.cutContexts, 188u);
    const std::string &last = lines.back();
    EXPECT_NE(last.find(";r.R.m511;[deeper_frames_cut];r.R.m699 1"), std::string::npos) << last.substr(last.size() - 80);
    EXPECT_EQ(std::count(last.begin(), last.end(), ';'), 513);
    EXPECT_NE(stats.Note().find("deeper than 512 frames"), std::string::npos) << stats.Note();
}

TEST(Collapsed, OverloadsAreTwoStacksNotDuplicates) {
    report::Profile p = CountsProfile(0);
    p.frames = {MethodFrame("shop.Shop", "main"), MethodFrame("shop.Shop", "place", "(I)V"),
                MethodFrame("shop.Shop", "place", "(Ljava/lang/String;I)V"), MethodFrame("shop.Cart", "add", "(I)V")};
    report::Tree &t = p.threads[0];
    t.nodes[AddPath(p, t, {0, 1})].self = {1};
    t.nodes[AddPath(p, t, {0, 2})].self = {2};
    report::NameOverloads(p.frames);
    p.Merge();
    std::ostringstream out;
    report::WriteCollapsed(p, out, 0, 0.0);
    EXPECT_EQ(out.str(), "shop.Shop.main;shop.Shop.place(int) 1\nshop.Shop.main;shop.Shop.place(String,int) 2\n");
    EXPECT_EQ(p.frames[3].name, "shop.Cart.add");  // one signature: no list
}

TEST(Names, BridgeMethodsByTheirReturnType) {
    std::vector<report::Frame> frames{MethodFrame("a.Loader$3", "run", "()Ljava/lang/Object;"),
                                      MethodFrame("a.Loader$3", "run", "()La/Loader$Jar;"),
                                      MethodFrame("a.Loader$3", "run", "(I)V")};
    report::NameOverloads(frames);
    EXPECT_EQ(frames[0].name, "a.Loader$3.run():Object");
    EXPECT_EQ(frames[1].name, "a.Loader$3.run():Loader$Jar");
    EXPECT_EQ(frames[2].name, "a.Loader$3.run(int)");
}

TEST(Names, OtherRuntimesSignaturesInBrackets) {
    std::vector<report::Frame> frames{MethodFrame("inventory", "find", "inventory.lua:12"),
                                      MethodFrame("inventory", "find", "inventory.lua:40")};
    report::NameOverloads(frames);
    EXPECT_EQ(frames[0].name, "inventory.find[inventory.lua:12]");
    EXPECT_EQ(frames[1].name, "inventory.find[inventory.lua:40]");
}

TEST(Names, ReadableParameters) {
    EXPECT_EQ(report::ReadableParameters("()V"), "()");
    EXPECT_EQ(report::ReadableParameters("(I[Ljava/lang/String;[[JLshop/Shop$Order;)V"), "(int,String[],long[][],Shop$Order)");
    EXPECT_EQ(report::ReadableParameters("(ZBCSFD)I"), "(boolean,byte,char,short,float,double)");
    EXPECT_EQ(report::ReadableParameters("lua:12"), "lua:12");
    EXPECT_EQ(report::ReadableParameters("(Q)V"), "(Q)V");
}

// ---- Threads without a name --------------------------------------------------------

TEST(Threads, OneNameForUnnamedThreadsInEveryFormat) {
    report::Profile p = CountsProfile(1);
    p.threads[0].threadId = 6;
    p.threads[0].threadName = "";
    p.threads[0].nodes[AddPath(p, p.threads[0], {0})].self = {1};
    p.spans.push_back({6, 0, 1000, 500, "call"});
    p.Merge();
    std::ostringstream js;
    report::WriteJson(p, js);
    EXPECT_EQ(json::parse(js.str())["threads"][0]["name"], "thread 6");
    std::ostringstream trace;
    report::WriteChromeTrace(p, trace);
    bool named = false;
    const json doc = json::parse(trace.str());
    for (const json &e : doc["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name") named = e["args"]["name"] == "thread 6";
    }
    EXPECT_TRUE(named) << trace.str();
    std::istringstream in(js.str());
    report::Profile back;
    ASSERT_EQ(report::ReadJson(in, back), "");
    EXPECT_EQ(back.threads[0].threadName, "thread 6");
}

// ---- Chrome trace cut ----------------------------------------------------------------

TEST(ChromeTrace, SaysWhenCutAndHowToKeepMore) {
    report::Profile p = CountsProfile(1);
    p.spans.push_back({1, 0, 1000, 500, "call"});
    p.spans.push_back({1, 0, 2000, 500, "call"});
    std::ostringstream whole;
    report::WriteChromeTrace(p, whole);
    EXPECT_EQ(whole.str().find("trace cut"), std::string::npos);
    p.counters.push_back({report::kTraceCallsNotKept, 98});
    std::ostringstream cut;
    report::WriteChromeTrace(p, cut);
    const json doc = json::parse(cut.str());
    const std::string note = doc["otherData"]["cut"];
    EXPECT_NE(note.find("trace cut after 2 calls (98 later calls not kept"), std::string::npos) << note;
    EXPECT_NE(note.find("use trace=100 to keep them all"), std::string::npos) << note;
    bool instant = false;
    for (const json &e : doc["traceEvents"]) instant |= e["ph"] == "i" && e["name"] == note && e["ts"] == 1.0;
    EXPECT_TRUE(instant) << cut.str();
}

// ---- pprof -----------------------------------------------------------------------------

perftools::profiles::Profile ReadPprof(const std::string &path) {
    gzFile f = gzopen(path.c_str(), "rb");
    std::string raw;
    char buf[65536];
    for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) raw.append(buf, std::size_t(n));
    gzclose(f);
    perftools::profiles::Profile pb;
    EXPECT_TRUE(pb.ParseFromString(raw));
    return pb;
}

TEST(Pprof, PeriodTypeLinesAndThreadLabels) {
    report::Profile p;
    p.tool = "cgprof";
    p.metrics = {{"calls", "count"}, {"wall", "nanoseconds"}};
    p.defaultMetric = 1;
    p.frames = {MethodFrame("shop.Shop", "main", "([Ljava/lang/String;)V", 12)};
    report::Tree &t = NewThread(p, 6, "");
    t.nodes[AddPath(p, t, {0})].self = {1, 100};
    p.Merge();
    const std::string path = (std::filesystem::temp_directory_path() / "report-test.pb.gz").string();
    ASSERT_EQ(report::WritePprof(p, path), "");
    const auto pb = ReadPprof(path);
    std::remove(path.c_str());
    EXPECT_EQ(pb.string_table(pb.period_type().type()), "wall");
    EXPECT_EQ(pb.string_table(pb.period_type().unit()), "nanoseconds");
    EXPECT_EQ(pb.period(), 1);
    ASSERT_EQ(pb.function_size(), 1);
    EXPECT_EQ(pb.function(0).start_line(), 12);
    EXPECT_EQ(pb.location(0).line(0).line(), 12);
    ASSERT_EQ(pb.sample_size(), 1);
    EXPECT_EQ(pb.string_table(pb.sample(0).label(0).str()), "thread 6");
}

TEST(Pprof, CallersAreAtTheLineOfTheirCall) {
    report::Profile p;
    p.tool = "cgprof";
    p.metrics = {{"calls", "count"}};
    p.frames = {MethodFrame("shop.Shop", "main", "", 10), MethodFrame("shop.Cart", "add", "", 30),
                MethodFrame("shop.Cart", "total", "", 40)};
    report::Tree &t = NewThread(p, 1, "main");
    const std::uint32_t add = AddPath(p, t, {0, 1});
    t.nodes[add].self = {2};
    t.nodes[add].callLine = 14;  // main calls add at line 14
    const std::uint32_t total = AddPath(p, t, {0, 2});
    t.nodes[total].self = {1};  // call site unknown: main's first line
    p.Merge();
    EXPECT_EQ(p.merged.nodes[2].callLine, 14u);
    const std::string path = (std::filesystem::temp_directory_path() / "report-test-lines.pb.gz").string();
    ASSERT_EQ(report::WritePprof(p, path), "");
    const auto pb = ReadPprof(path);
    std::remove(path.c_str());
    auto lineOf = [&](std::uint64_t location) -> std::pair<std::uint64_t, std::int64_t> {
        for (const auto &l : pb.location()) {
            if (l.id() == location) return {l.line(0).function_id(), l.line(0).line()};
        }
        return {0, -1};
    };
    std::vector<std::vector<std::pair<std::uint64_t, std::int64_t>>> stacks;
    for (const auto &sample : pb.sample()) {
        stacks.emplace_back();
        for (std::uint64_t id : sample.location_id()) stacks.back().push_back(lineOf(id));
    }
    using Stack = std::vector<std::pair<std::uint64_t, std::int64_t>>;
    EXPECT_NE(std::find(stacks.begin(), stacks.end(), Stack{{2, 30}, {1, 14}}), stacks.end());  // add, main:14
    EXPECT_NE(std::find(stacks.begin(), stacks.end(), Stack{{3, 40}, {1, 10}}), stacks.end());  // total, main:10
}

TEST(Pprof, PathsDeeperThanTheCapShareOneCutSample) {
    report::Profile p = Chain(600);
    const std::string path = (std::filesystem::temp_directory_path() / "report-test-deep.pb.gz").string();
    ASSERT_EQ(report::WritePprof(p, path), "");
    const auto pb = ReadPprof(path);
    std::remove(path.c_str());
    ASSERT_EQ(pb.sample_size(), 600);  // 512 above the cap, one per method below it
    const auto &last = pb.sample(pb.sample_size() - 1);
    EXPECT_EQ(last.location_id_size(), int(report::kCollapsedMaxDepth) + 2);
    EXPECT_EQ(last.location_id(0), 600u);  // m599, the cut location, then m511 ... m0
    EXPECT_EQ(last.location_id(1), 601u);
    EXPECT_EQ(last.location_id(2), 512u);
    EXPECT_EQ(last.value(0), 1);
}

// ---- JSON ------------------------------------------------------------------------------

TEST(Json, StreamedWriterRoundTripsAndEscapes) {
    report::Profile p = HeapProfile();
    p.runtime = "vm \"17\"\n\x01 \xff end";
    p.frames[0].line = 9;
    p.spans.push_back({1, 1, 5, 6, "call"});
    p.threadNames.push_back({3, ""});
    p.counters = {{"a", 1}, {"b", 0}};
    std::ostringstream out;
    report::WriteJson(p, out);
    const json doc = json::parse(out.str());  // valid JSON (the \xff replaced)
    EXPECT_EQ(doc["runtime"], "vm \"17\"\n\x01 \xEF\xBF\xBD end");
    std::istringstream in(out.str());
    report::Profile back;
    ASSERT_EQ(report::ReadJson(in, back), "");
    EXPECT_EQ(back.frames[0].line, 9);
    EXPECT_EQ(back.threads[0].nodes.size(), 3u);
    EXPECT_EQ(back.threads[0].nodes[2].self, (std::vector<std::uint64_t>{30, 6000}));
    EXPECT_EQ(back.merged.nodes.size(), 3u);
    ASSERT_EQ(back.spans.size(), 1u);
    EXPECT_EQ(back.spans[0].durationNs, 6u);
    EXPECT_EQ(back.threadNames[0].name, "thread 3");
    EXPECT_EQ(back.counters.size(), 2u);
    EXPECT_EQ(back.defaultMetric, 1u);
    EXPECT_EQ(doc["threads"][0].count("callLines"), 0u);  // none known: not written
}

TEST(Json, CallLinesRoundTripAndAreChecked) {
    report::Profile p = HeapProfile();
    p.threads[0].nodes[2].callLine = 77;
    p.Merge();
    std::ostringstream out;
    report::WriteJson(p, out);
    std::istringstream in(out.str());
    report::Profile back;
    ASSERT_EQ(report::ReadJson(in, back), "");
    EXPECT_EQ(back.threads[0].nodes[2].callLine, 77u);
    EXPECT_EQ(back.merged.nodes[2].callLine, 77u);
    json doc = json::parse(out.str());
    doc["threads"][0]["callLines"] = json::array({0, 1});
    std::istringstream bad(doc.dump());
    EXPECT_NE(report::ReadJson(bad, back).find("threads[0].callLines: expected one line per node (3)"),
              std::string::npos);
}

}  // namespace
