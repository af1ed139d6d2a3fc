// Sampled profiles' lines and times in the report library: lines merged over threads,
// the hot-lines table, pprof's leaf lines, the JSON's selfLines and timeline (written,
// read back, checked), a time window, and the timeline as Chrome trace spans.
#include "martini/report/profile.h"

#include "profile.pb.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace report = martini::report;

namespace {

constexpr std::uint64_t kPeriod = 10;

report::Frame Method(const std::string &name, int line) {
    report::Frame f;
    f.name = name;
    f.file = "X.java";
    f.line = line;
    return f;
}

// Frames A (line 10) and B (line 20); per thread the tree root -> A -> B.
report::Profile SampledProfile() {
    report::Profile p;
    p.tool = "cgprof";
    p.metrics = {{"samples", "count"}, {"cpu", "nanoseconds"}};
    p.defaultMetric = 1;
    p.periodNs = kPeriod;
    p.frames = {Method("A", 10), Method("B", 20)};
    for (std::uint64_t id : {1, 2}) {
        report::Tree t;
        t.threadId = id;
        t.Clear(2);
        const std::uint32_t a = t.Add(0, 0, 2);
        t.Add(a, 1, 2);
        p.threads.push_back(std::move(t));
    }
    return p;
}

// A sample of thread `tree` at `time` counted in `node` at `line`: self and lines too.
void Sample(report::Profile &p, std::uint32_t tree, std::uint64_t time, std::uint32_t node, std::uint32_t line) {
    report::Node &n = p.threads[tree].nodes[node];
    n.self[0] += 1;
    n.self[1] += kPeriod;
    auto it = n.selfLines.begin();
    while (it != n.selfLines.end() && it->first < line) ++it;
    if (it != n.selfLines.end() && it->first == line) ++it->second;
    else n.selfLines.insert(it, {line, 1});
    p.timeline.push_back({time, tree, node, line});
}

std::string HotLines(const report::Profile &p) {
    std::ostringstream out;
    report::WriteHotLines(p, out, 10);
    return out.str();
}

std::string TopTable(const report::Profile &p) {
    std::ostringstream out;
    report::WriteTopTable(p, out, 10);
    return out.str();
}

}  // namespace

TEST(SampledLines, MergedOverThreadsAndRankedInTheHotLinesTable) {
    report::Profile p = SampledProfile();
    Sample(p, 0, 100, 2, 22);
    Sample(p, 0, 110, 2, 21);
    Sample(p, 1, 100, 2, 22);
    Sample(p, 1, 110, 1, 11);
    p.Merge();
    const auto &merged = p.merged.nodes[2].selfLines;
    ASSERT_EQ(merged.size(), 2u);
    EXPECT_EQ(merged[0], (std::pair<std::uint32_t, std::uint64_t>{21, 1}));
    EXPECT_EQ(merged[1], (std::pair<std::uint32_t, std::uint64_t>{22, 2}));
    const std::string table = HotLines(p);
    EXPECT_NE(table.find("top 3 of 3 lines by self cpu"), std::string::npos) << table;
    const std::size_t b22 = table.find("X.java:22"), b21 = table.find("X.java:21"), a11 = table.find("X.java:11");
    ASSERT_NE(b22, std::string::npos) << table;
    EXPECT_LT(b22, b21) << table;
    EXPECT_LT(b22, a11) << table;
    EXPECT_NE(table.find("50.0%"), std::string::npos) << table;
}

TEST(SampledLines, ProfileWithoutLinesSaysSo) {
    report::Profile p = SampledProfile();
    p.threads[0].nodes[1].self = {1, kPeriod};
    p.Merge();
    EXPECT_NE(HotLines(p).find("has no lines"), std::string::npos);
}

TEST(SampledLines, PprofLeafLocationsAtTheSampledLines) {
    report::Profile p = SampledProfile();
    Sample(p, 0, 100, 2, 22);
    Sample(p, 0, 110, 2, 22);
    Sample(p, 0, 120, 2, 23);
    p.Merge();
    const std::string path = (std::filesystem::temp_directory_path() / "sampled-test.pb.gz").string();
    ASSERT_EQ(report::WritePprof(p, path), "");
    gzFile f = gzopen(path.c_str(), "rb");
    std::string raw;
    char buf[65536];
    for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) raw.append(buf, std::size_t(n));
    gzclose(f);
    std::remove(path.c_str());
    perftools::profiles::Profile pb;
    ASSERT_TRUE(pb.ParseFromString(raw));
    std::map<std::int64_t, std::int64_t> cpuByLeafLine;
    for (const auto &s : pb.sample()) {
        for (const auto &location : pb.location()) {
            if (location.id() == s.location_id(0)) cpuByLeafLine[location.line(0).line()] += s.value(1);
        }
    }
    EXPECT_EQ(cpuByLeafLine, (std::map<std::int64_t, std::int64_t>{{22, 2 * kPeriod}, {23, kPeriod}}));
}

TEST(SampledTime, JsonRoundTripKeepsLinesAndTimeline) {
    report::Profile p = SampledProfile();
    Sample(p, 0, 100, 2, 22);
    Sample(p, 1, 105, 1, 11);
    p.Merge();
    std::ostringstream json;
    report::WriteJson(p, json);
    report::Profile back;
    std::istringstream in(json.str());
    ASSERT_EQ(report::ReadJson(in, back), "");
    ASSERT_EQ(back.timeline.size(), 2u);
    EXPECT_EQ(back.timeline[1].timeNs, 105u);
    EXPECT_EQ(back.timeline[1].tree, 1u);
    EXPECT_EQ(back.timeline[1].node, 1u);
    EXPECT_EQ(back.timeline[1].line, 11u);
    EXPECT_EQ(back.threads[0].nodes[2].selfLines, p.threads[0].nodes[2].selfLines);
    // The HTML's JSON has no timeline (it leaves the spans out too).
    std::ostringstream html;
    report::WriteJson(p, html, /*withSpans=*/false);
    EXPECT_EQ(html.str().find("\"timeline\""), std::string::npos);
    EXPECT_NE(html.str().find("\"selfLines\""), std::string::npos);
}

TEST(SampledTime, JsonReaderNamesABadTimelineOrLines) {
    report::Profile p = SampledProfile();
    Sample(p, 0, 100, 2, 22);
    p.Merge();
    std::ostringstream json;
    report::WriteJson(p, json);
    auto read = [](const std::string &text) {
        report::Profile back;
        std::istringstream in(text);
        return report::ReadJson(in, back);
    };
    std::string text = json.str();
    std::string badNode = text;
    badNode.replace(badNode.find("\"timeline\":[[100,0,2,22]]"), 25, "\"timeline\":[[100,0,9,22]]");
    EXPECT_NE(read(badNode).find("timeline[0]: node 9 is not in its thread's tree"), std::string::npos) << read(badNode);
    std::string badThread = text;
    badThread.replace(badThread.find("\"timeline\":[[100,0,2,22]]"), 25, "\"timeline\":[[100,5,2,22]]");
    EXPECT_NE(read(badThread).find("thread index 5"), std::string::npos) << read(badThread);
    std::string badLines = text;
    badLines.replace(badLines.find("\"selfLines\":[[2,22,1]]"), 22, "\"selfLines\":[[2,22,1],[2,21,1]]");
    EXPECT_NE(read(badLines).find("lines of a node must ascend"), std::string::npos) << read(badLines);
}

TEST(SampledTime, WindowKeepsOnlyItsSamples) {
    report::Profile p = SampledProfile();
    Sample(p, 0, 1000, 1, 11);  // t=0: A
    Sample(p, 0, 1010, 1, 11);
    Sample(p, 0, 1020, 2, 22);  // t=20: B
    Sample(p, 1, 1030, 2, 23);
    p.Merge();
    ASSERT_EQ(report::KeepTimeWindow(p, 20, 40), "");
    EXPECT_EQ(p.timeline.size(), 2u);
    EXPECT_EQ(p.merged.nodes[1].self, (std::vector<std::uint64_t>{0, 0}));
    EXPECT_EQ(p.merged.nodes[2].self, (std::vector<std::uint64_t>{2, 2 * kPeriod}));
    const auto lines = p.merged.nodes[2].selfLines;
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0].first, 22u);
    const std::string table = TopTable(p);
    EXPECT_NE(table.find("cpu in all: 0.020 us"), std::string::npos) << table;
}

TEST(SampledTime, WindowRefusedWithoutAWholeTimeline) {
    report::Profile none = SampledProfile();
    EXPECT_NE(report::KeepTimeWindow(none, 0, 10).find("has no timeline"), std::string::npos);
    report::Profile cut = SampledProfile();
    Sample(cut, 0, 1000, 1, 11);
    cut.counters.emplace_back(report::kTimelineNotKept, 5);
    EXPECT_NE(report::KeepTimeWindow(cut, 0, 10).find("5 samples past its budget"), std::string::npos);
    EXPECT_NE(report::KeepTimeWindow(cut, 10, 10).find("timeline is not whole"), std::string::npos);
    report::Profile whole = SampledProfile();
    Sample(whole, 0, 1000, 1, 11);
    EXPECT_NE(report::KeepTimeWindow(whole, 10, 10).find("--from must be before --to"), std::string::npos);
}

TEST(SampledTime, TimelineSpansFollowTheStacksOverTime) {
    report::Profile p = SampledProfile();
    Sample(p, 0, 0, 2, 22);    // A;B
    Sample(p, 0, 10, 2, 22);   // A;B
    Sample(p, 0, 20, 1, 11);   // A: B ends at 20
    Sample(p, 0, 100, 1, 11);  // a gap of more than two periods: A ends at 30, starts again
    p.Merge();
    std::vector<std::string> got;
    for (const report::Span &s : report::TimelineSpans(p)) {
        got.push_back(p.frames[s.frame].name + "@" + std::to_string(s.startNs) + "+" + std::to_string(s.durationNs) +
                      ":" + s.category);
    }
    EXPECT_EQ(got, (std::vector<std::string>{"B@0+20:sample", "A@0+30:sample", "A@100+10:sample"}));
    std::ostringstream trace;
    report::WriteChromeTrace(p, trace);
    const auto doc = nlohmann::json::parse(trace.str());
    EXPECT_EQ(doc["otherData"]["synthesized"], false);
}
