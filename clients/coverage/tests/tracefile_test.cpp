// The coverage format library (clients/coverage/src): lcov tracefiles written, read
// back and merged; what a malformed tracefile is told with; Cobertura XML and the HTML
// page of a tracefile.
#include "martini/coverage/tracefile.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace cov = martini::coverage;

namespace {

// Two files: one with functions, lines and branches (one never evaluated), one bare.
cov::Tracefile Sample() {
    cov::Tracefile t;
    t.testName = "unit";
    cov::File &tree = t.files["/src/lib/tree.lua"];
    tree.lines = {{2, 10}, {3, 1}, {5, 5}, {6, 0}};
    tree.functions["tree.insert"] = {2, 10};
    tree.functions["tree.(main chunk)"] = {3, 1};
    tree.functions["tree.unused"] = {6, 0};
    tree.branches[{5, 12, 0}] = 3;
    tree.branches[{5, 12, 1}] = 2;
    tree.branches[{6, 20, 0}] = std::nullopt;
    cov::File &main = t.files["/src/main.lua"];
    main.lines = {{1, 1}};
    return t;
}

std::string Lcov(const cov::Tracefile &t) {
    std::ostringstream out;
    cov::WriteLcov(t, out);
    return out.str();
}

// ReadLcov of `text`: "" or the message.
std::string Read(const std::string &text, cov::Tracefile &t, const std::string &name = "in.info") {
    std::istringstream in(text);
    return cov::ReadLcov(in, name, t);
}

void ExpectSame(const cov::Tracefile &a, const cov::Tracefile &b) {
    EXPECT_EQ(a.testName, b.testName);
    ASSERT_EQ(a.files.size(), b.files.size());
    for (const auto &[path, f] : a.files) {
        const auto other = b.files.find(path);
        ASSERT_NE(other, b.files.end()) << path;
        EXPECT_EQ(f.lines, other->second.lines) << path;
        EXPECT_EQ(f.branches, other->second.branches) << path;
        ASSERT_EQ(f.functions.size(), other->second.functions.size()) << path;
        for (const auto &[name, fn] : f.functions) {
            const auto g = other->second.functions.find(name);
            ASSERT_NE(g, other->second.functions.end()) << name;
            EXPECT_EQ(fn.line, g->second.line) << name;
            EXPECT_EQ(fn.count, g->second.count) << name;
        }
    }
}

TEST(Lcov, WritesGeninfosRecords) {
    EXPECT_EQ(Lcov(Sample()),
              "TN:unit\nSF:/src/lib/tree.lua\n"
              "FN:2,tree.insert\nFN:3,tree.(main chunk)\nFN:6,tree.unused\n"
              "FNDA:10,tree.insert\nFNDA:1,tree.(main chunk)\nFNDA:0,tree.unused\n"
              "FNF:3\nFNH:2\n"
              "BRDA:5,12,0,3\nBRDA:5,12,1,2\nBRDA:6,20,0,-\nBRF:3\nBRH:2\n"
              "DA:2,10\nDA:3,1\nDA:5,5\nDA:6,0\nLF:4\nLH:3\nend_of_record\n"
              "TN:unit\nSF:/src/main.lua\nFNF:0\nFNH:0\nBRF:0\nBRH:0\nDA:1,1\nLF:1\nLH:1\nend_of_record\n");
}

TEST(Lcov, WhatIsWrittenReadsBackTheSame) {
    const cov::Tracefile t = Sample();
    cov::Tracefile back;
    ASSERT_EQ(Read(Lcov(t), back), "");
    ExpectSame(t, back);
    EXPECT_EQ(Lcov(back), Lcov(t)) << "written again, byte for byte";
}

TEST(Lcov, ReadsWhatOtherToolsWrite) {
    // geninfo's checksums on DA, CRLF line ends, blank lines, summary lines anywhere.
    cov::Tracefile t;
    ASSERT_EQ(Read("TN:\r\nSF:a.c\r\nFN:4,main\r\nFNDA:2,main\r\n\r\nDA:4,2,Ab3xZ\r\nDA:5,0\r\nLH:1\r\nLF:2\r\n"
                   "BRDA:5,0,0,-\r\nend_of_record\r\n",
                   t),
              "");
    const cov::File &f = t.files.at("a.c");
    EXPECT_EQ(f.lines, (std::map<unsigned, std::uint64_t>{{4, 2}, {5, 0}}));
    EXPECT_EQ(f.functions.at("main").line, 4u);
    EXPECT_EQ(f.functions.at("main").count, 2u);
    EXPECT_FALSE(f.branches.at({5, 0, 0}).has_value());
    // A function name may hold commas (a signature); the same record twice adds up.
    cov::Tracefile u;
    ASSERT_EQ(Read("SF:b.java\nFN:3,B.f(II,J)V\nFNDA:1,B.f(II,J)V\nDA:3,1\nend_of_record\n"
                   "SF:b.java\nFNDA:2,B.f(II,J)V\nDA:3,4\nend_of_record\n",
                   u),
              "");
    EXPECT_EQ(u.files.at("b.java").functions.at("B.f(II,J)V").count, 3u);
    EXPECT_EQ(u.files.at("b.java").lines.at(3), 5u);
}

TEST(Lcov, AMalformedLineIsNamedWithItsFileAndLineNumber) {
    struct Case {
        const char *text, *message;
    };
    const Case cases[] = {
        {"SF:a\nDA:x,1\nend_of_record\n",
         "in.info:2: expected DA:<line>,<count> (not an lcov tracefile line: 'DA:x,1')"},
        {"SF:a\nDA:3\n", "in.info:2: expected DA:<line>,<count> (not an lcov tracefile line: 'DA:3')"},
        {"SF:a\nFN:abc\n", "in.info:2: expected FN:<line>,<name> (not an lcov tracefile line: 'FN:abc')"},
        {"SF:a\nFNDA:1,\n", "in.info:2: expected FNDA:<count>,<name> (not an lcov tracefile line: 'FNDA:1,')"},
        {"SF:a\nBRDA:1,2,3\n",
         "in.info:2: expected BRDA:<line>,<block>,<branch>,<taken or -> (not an lcov tracefile line: 'BRDA:1,2,3')"},
        {"SF:a\nLF:many\n", "in.info:2: expected LF:<count> (not an lcov tracefile line: 'LF:many')"},
        {"DA:1,1\n", "in.info:1: a record line outside SF ... end_of_record (not an lcov tracefile line: 'DA:1,1')"},
        {"SF:\n", "in.info:1: SF without a path (not an lcov tracefile line: 'SF:')"},
        {"SF:a\nXY:1\n", "in.info:2: unknown record 'XY' (not an lcov tracefile line: 'XY:1')"},
        {"<html>\n", "in.info:1: a record line outside SF ... end_of_record (not an lcov tracefile line: '<html>')"},
        {"SF:a\nDA:1,1\n", "in.info:3: the last record has no end_of_record: the file is cut short"},
    };
    for (const Case &c : cases) {
        cov::Tracefile t;
        EXPECT_EQ(Read(c.text, t), c.message) << c.text;
    }
}

TEST(Merge, AddsCountsAndKeepsWhatOnlyOneHas) {
    cov::Tracefile into = Sample();
    cov::Tracefile from = Sample();
    from.files["/src/other.lua"].lines = {{7, 4}};
    from.files["/src/lib/tree.lua"].branches[{6, 20, 0}] = 5;  // evaluated in this one only
    from.files["/src/lib/tree.lua"].lines[9] = 2;
    ASSERT_EQ(cov::Merge(into, from, "b.info"), "");
    const cov::File &tree = into.files.at("/src/lib/tree.lua");
    EXPECT_EQ(tree.lines, (std::map<unsigned, std::uint64_t>{{2, 20}, {3, 2}, {5, 10}, {6, 0}, {9, 2}}));
    EXPECT_EQ(tree.functions.at("tree.insert").count, 20u);
    EXPECT_EQ(tree.functions.at("tree.insert").line, 2u);
    EXPECT_EQ(tree.functions.at("tree.unused").count, 0u);
    EXPECT_EQ(tree.branches.at({5, 12, 0}), 6u);
    EXPECT_EQ(tree.branches.at({6, 20, 0}), 5u) << "never evaluated + 5 = 5";
    EXPECT_EQ(into.files.at("/src/other.lua").lines.at(7), 4u);
    EXPECT_EQ(into.files.at("/src/main.lua").lines.at(1), 2u);
    // Never evaluated in both stays never evaluated.
    cov::Tracefile a = Sample(), b = Sample();
    ASSERT_EQ(cov::Merge(a, b, "b.info"), "");
    EXPECT_FALSE(a.files.at("/src/lib/tree.lua").branches.at({6, 20, 0}).has_value());
    // Into nothing: a copy.
    cov::Tracefile empty;
    ASSERT_EQ(cov::Merge(empty, Sample(), "a.info"), "");
    cov::Tracefile expected = Sample();
    expected.testName = "";  // the test name is the merged file's own
    ExpectSame(empty, expected);
}

TEST(Merge, RefusesAFunctionThatStartsOnAnotherLineAndChangesNothing) {
    cov::Tracefile into = Sample();
    cov::Tracefile from = Sample();
    from.files["/src/new.lua"].lines = {{1, 1}};  // would be added if the merge went on
    from.files["/src/lib/tree.lua"].functions["tree.insert"].line = 4;
    const std::string before = Lcov(into);
    EXPECT_EQ(cov::Merge(into, from, "run-2/coverage.info"),
              "run-2/coverage.info: /src/lib/tree.lua: function tree.insert starts on line 4, on line 2 in the "
              "files before it: they were made from different sources and cannot be merged");
    EXPECT_EQ(Lcov(into), before);
}

TEST(Totals, CountLinesFunctionsAndBranchesHit) {
    const cov::Totals all = cov::Count(Sample());
    EXPECT_EQ(all.lines, 5u);
    EXPECT_EQ(all.linesHit, 4u);
    EXPECT_EQ(all.functions, 3u);
    EXPECT_EQ(all.functionsHit, 2u);
    EXPECT_EQ(all.branches, 3u);
    EXPECT_EQ(all.branchesHit, 2u);
    EXPECT_EQ(cov::Totals::Rate(0, 0), 1.0) << "nothing to cover is all covered";
}

TEST(Cobertura, OnePackagePerDirectoryOneClassPerFile) {
    std::ostringstream out;
    cov::WriteCobertura(Sample(), out, 1700000000000);
    const std::string xml = out.str();
    EXPECT_NE(xml.find("<coverage line-rate=\"0.8000\" branch-rate=\"0.6667\" lines-covered=\"4\" lines-valid=\"5\" "
                       "branches-covered=\"2\" branches-valid=\"3\""),
              std::string::npos)
        << xml;
    EXPECT_NE(xml.find("timestamp=\"1700000000000\""), std::string::npos);
    EXPECT_NE(xml.find("<source>/src</source>"), std::string::npos) << "the common directory";
    EXPECT_NE(xml.find("<package name=\"lib\""), std::string::npos) << xml;
    EXPECT_NE(xml.find("<package name=\"\""), std::string::npos) << xml;
    EXPECT_NE(xml.find("<class name=\"tree\" filename=\"lib/tree.lua\" line-rate=\"0.7500\""), std::string::npos)
        << xml;
    EXPECT_NE(xml.find("<line number=\"5\" hits=\"5\" branch=\"true\" condition-coverage=\"100.0% (2/2)\"/>"),
              std::string::npos)
        << xml;
    EXPECT_NE(xml.find("<line number=\"6\" hits=\"0\" branch=\"true\" condition-coverage=\"0.0% (0/1)\"/>"),
              std::string::npos)
        << xml;
    EXPECT_NE(xml.find("<method name=\"tree.(main chunk)\""), std::string::npos);
}

TEST(Cobertura, NamesAreEscaped) {
    cov::Tracefile t;
    t.files["/src/a&b.lua"].functions["f<T>\"q\""] = {1, 1};
    t.files["/src/a&b.lua"].lines[1] = 1;
    std::ostringstream out;
    cov::WriteCobertura(t, out, 0);
    EXPECT_NE(out.str().find("filename=\"a&amp;b.lua\""), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("<method name=\"f&lt;T&gt;&quot;q&quot;\""), std::string::npos) << out.str();
}

TEST(Html, ColoursEachLineByItsCount) {
    const cov::SourceReader read = [](const std::string &path) -> std::optional<std::vector<std::string>> {
        if (path != "/src/lib/tree.lua") return std::nullopt;
        return std::vector<std::string>{"local function insert(t, k)", "  if k < t.k then", "x = 1",
                                        "-- a comment", "  if a then return end", "  never()"};
    };
    std::ostringstream out;
    cov::WriteHtml(Sample(), out, read);
    const std::string html = out.str();
    EXPECT_NE(html.find("<p>Lines 4 of 5 (80.0%), functions 2 of 3 (66.7%), branches 2 of 3 (66.7%).</p>"),
              std::string::npos)
        << html;
    EXPECT_NE(html.find("<tr class=\"hit\"><td class=\"n\">2</td><td class=\"c\">10</td><td>  if k &lt; t.k then"),
              std::string::npos)
        << html;
    EXPECT_NE(html.find("<tr><td class=\"n\">4</td><td class=\"c\"></td><td>-- a comment</td></tr>"),
              std::string::npos)
        << "a line without code: no colour";
    EXPECT_NE(html.find("<tr class=\"hit\"><td class=\"n\">5</td><td class=\"c\">5 [2/2]</td>"), std::string::npos)
        << html;
    EXPECT_NE(html.find("<tr class=\"miss\"><td class=\"n\">6</td><td class=\"c\">0 [0/1]</td>"), std::string::npos)
        << html;
    // A file whose source is not found: said, with its counted lines.
    EXPECT_NE(html.find("Source not found: /src/main.lua"), std::string::npos) << html;
    EXPECT_NE(html.find("<tr class=\"hit\"><td class=\"n\">1</td><td class=\"c\">1</td></tr>"), std::string::npos);
    // Least covered first: tree.lua (75%) before main.lua (100%).
    EXPECT_LT(html.find("<a href=\"#f0\">/src/lib/tree.lua</a>"), html.find("<a href=\"#f1\">/src/main.lua</a>"));
}

TEST(Html, ALineWithABranchNeverTakenIsPartlyCovered) {
    cov::Tracefile t;
    cov::File &f = t.files["a.lua"];
    f.lines[1] = 4;
    f.branches[{1, 0, 0}] = 4;
    f.branches[{1, 0, 1}] = 0;
    std::ostringstream out;
    cov::WriteHtml(t, out, [](const std::string &) { return std::vector<std::string>{"if x then y() end"}; });
    EXPECT_NE(out.str().find("<tr class=\"part\"><td class=\"n\">1</td><td class=\"c\">4 [1/2]</td>"),
              std::string::npos)
        << out.str();
}

TEST(Summary, OneLineThenTheLeastCoveredFiles) {
    std::ostringstream out;
    cov::WriteSummary(Sample(), out, 1);
    EXPECT_EQ(out.str(),
              "coverage: 2 files, lines 4/5 (80.0%), functions 2/3 (66.7%), branches 2/3 (66.7%)\n"
              "   lines     hit/all   functions    branches  file\n"
              "   75.0%         3/4         2/3         2/3  /src/lib/tree.lua\n"
              "         (1 more files, best covered)\n");
    std::ostringstream brief;
    cov::WriteSummary(Sample(), brief, 0);
    EXPECT_EQ(brief.str(), "coverage: 2 files, lines 4/5 (80.0%), functions 2/3 (66.7%), branches 2/3 (66.7%)\n");
}

}  // namespace
