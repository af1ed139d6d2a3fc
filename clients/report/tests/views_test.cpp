// The views of views.h: the HTML report of a large profile (pruned to a node budget,
// totals and top rows exact), collapsed stacks per thread, comparing two profiles.
#include "martini/report/profile.h"
#include "martini/report/views.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace report = martini::report;
using nlohmann::json;

namespace {

report::Profile TimeProfile(std::size_t frames) {
    report::Profile p;
    p.tool = "cgprof";
    p.mode = "time";
    p.metrics = {{"calls", "count"}, {"wall", "nanoseconds"}};
    p.defaultMetric = 1;
    for (std::size_t i = 0; i < frames; ++i) {
        report::Frame f;
        f.name = std::to_string(i);
        f.name.insert(0, "r.R.m");
        p.frames.push_back(f);
    }
    return p;
}

report::Tree &NewThread(report::Profile &p, std::uint64_t id, const std::string &name) {
    report::Tree t;
    t.threadId = id;
    t.threadName = name;
    t.Clear(p.metrics.size());
    p.threads.push_back(std::move(t));
    return p.threads.back();
}

// A bushy random tree of `nodes` contexts per thread: a few heavy, most light.
report::Profile BigProfile(std::size_t threads, std::size_t nodes) {
    report::Profile p = TimeProfile(300);
    std::mt19937 rng(7);
    for (std::size_t t = 0; t < threads; ++t) {
        report::Tree &tree = NewThread(p, t + 1, "worker-" + std::to_string(t + 1));
        for (std::size_t i = 1; i < nodes; ++i) {
            const auto parent = std::uint32_t(rng() % i);
            const std::uint32_t at = tree.Add(parent, std::uint32_t(rng() % p.frames.size()), 2);
            tree.nodes[at].self = {1 + rng() % 3, i % 97 == 0 ? 1000000 : rng() % 100};
        }
    }
    p.Merge();
    return p;
}

// The page's two data scripts: the profile and what was pruned.
struct Page {
    json profile, extra;
};

Page Scripts(const std::string &html) {
    auto script = [&](const std::string &id) {
        const std::string open = "<script id=\"" + id + "\" type=\"application/json\">";
        const std::size_t from = html.find(open);
        EXPECT_NE(from, std::string::npos) << id;
        if (from == std::string::npos) return json();
        const std::size_t start = from + open.size();
        return json::parse(html.substr(start, html.find("</script>", start) - start));
    };
    return {script("martini-profile"), script("martini-html")};
}

std::vector<std::uint64_t> RootTotals(const json &tree, std::size_t metrics) {
    std::vector<std::uint64_t> sum(metrics, 0);
    for (const json &n : tree["nodes"]) {
        for (std::size_t k = 0; k < metrics; ++k) sum[k] += n[2 + k].get<std::uint64_t>();
    }
    return sum;
}

TEST(HtmlPruning, SmallProfilesAreEmbeddedWhole) {
    report::Profile p = BigProfile(1, 200);
    std::ostringstream out;
    const report::HtmlStats stats = report::WriteHtml(p, out, report::HtmlOptions{});
    EXPECT_EQ(stats.prunedContexts, 0u);
    EXPECT_EQ(stats.Note(), "");
    const Page page = Scripts(out.str());
    EXPECT_EQ(page.extra, json::object());
    EXPECT_EQ(page.profile["threads"][0]["nodes"].size(), 200u);
    EXPECT_EQ(page.profile["frames"].size(), 300u);
}

TEST(HtmlPruning, LargeProfilesKeepTheBudgetTotalsAndTopRows) {
    report::Profile p = BigProfile(2, 20000);
    report::HtmlOptions options;
    options.nodeBudget = 2000;
    std::ostringstream out;
    const report::HtmlStats stats = report::WriteHtml(p, out, options);
    const Page page = Scripts(out.str());
    const std::uint64_t all = 2 * 19999 + (p.merged.nodes.size() - 1);
    EXPECT_EQ(stats.contexts, all);
    EXPECT_EQ(page.extra["contexts"], all);
    EXPECT_EQ(page.extra["pruned"], stats.prunedContexts);
    EXPECT_GE(stats.prunedContexts, all - 2000);
    EXPECT_GT(stats.share, report::kHtmlMinShare);  // raised to meet the budget
    EXPECT_NE(stats.Note().find("calling contexts pruned"), std::string::npos) << stats.Note();
    // Kept contexts plus one "(N pruned)" node per parent that lost some; the root's
    // totals are the whole tree's.
    std::size_t nodes = 0, placeholders = 0;
    const auto prunedFrame = page.extra["prunedFrame"].get<std::size_t>();
    EXPECT_EQ(page.profile["frames"][prunedFrame]["name"], "(pruned)");
    std::vector<const json *> trees{&page.profile["merged"]};
    for (const json &t : page.profile["threads"]) trees.push_back(&t);
    ASSERT_EQ(trees.size(), 3u);
    for (std::size_t t = 0; t < trees.size(); ++t) {
        const json &nodesJson = (*trees[t])["nodes"];
        nodes += nodesJson.size() - 1;
        for (const json &n : nodesJson) placeholders += n[1] == prunedFrame;
        const report::Tree &original = t == 0 ? p.merged : p.threads[t - 1];
        const auto totals = report::Totals(original, 2);
        EXPECT_EQ(RootTotals(*trees[t], 2), totals[0]) << "tree " << t;
        std::uint64_t merged = 0;
        for (const json &e : page.extra["trees"][t]["pruned"]) merged += e[1].get<std::uint64_t>();
        EXPECT_EQ(page.extra["trees"][t]["pruned"].size(), std::size_t(std::count_if(
            nodesJson.begin(), nodesJson.end(), [&](const json &n) { return n[1] == prunedFrame; })));
        EXPECT_EQ(merged + nodesJson.size() - 1 - page.extra["trees"][t]["pruned"].size(), original.nodes.size() - 1);
    }
    EXPECT_LE(nodes - placeholders, 2000u);
    EXPECT_EQ(nodes - placeholders, all - stats.prunedContexts);
    // The merged tree's top rows are TopFrames' figures, from every context.
    const auto rows = report::TopFrames(p, 1);
    const json &tops = page.extra["trees"][0]["tops"];
    ASSERT_FALSE(tops.empty());
    EXPECT_EQ(page.extra["trees"][0]["methods"], rows.size());
    for (std::size_t r = 0; r < 5; ++r) {
        const std::string name = p.frames[rows[r].frame].name;
        auto row = std::find_if(tops.begin(), tops.end(), [&](const json &row) {
            return page.profile["frames"][row[0].get<std::size_t>()]["name"] == name;
        });
        ASSERT_NE(row, tops.end()) << name;
        EXPECT_EQ((*row)[2], rows[r].self) << name;   // self wall
        EXPECT_EQ((*row)[4], rows[r].total) << name;  // total wall, outermost activations
    }
}

TEST(HtmlPruning, ContextsUnderTheShareAreMergedPerParent) {
    report::Profile p = TimeProfile(4);
    p.metrics = {{"wall", "nanoseconds"}};
    p.defaultMetric = 0;
    report::Tree &t = NewThread(p, 1, "main");
    const std::uint32_t a = t.Add(0, 0, 1);
    t.nodes[a].self = {1000000};
    for (std::uint32_t i = 0; i < 10; ++i) {  // ten light children of a, each with a child
        const std::uint32_t light = t.Add(a, 1 + i % 3, 1);
        t.nodes[light].self = {10};
        t.nodes[t.Add(light, 0, 1)].self = {5};
    }
    p.Merge();  // a, its 3 children by frame and theirs: 7 contexts
    report::HtmlOptions options;
    options.nodeBudget = 4;  // of 28 in all
    std::ostringstream out;
    const report::HtmlStats stats = report::WriteHtml(p, out, options);
    const Page page = Scripts(out.str());
    // a is kept (share 1); everything under it (each under 0.01%) goes into one
    // "(20 pruned)" node holding their totals, 10 x (10 + 5).
    const json &nodes = page.profile["threads"][0]["nodes"];
    ASSERT_EQ(nodes.size(), 3u) << nodes;
    EXPECT_EQ(nodes[2], json::array({1, page.extra["prunedFrame"], 150}));
    EXPECT_EQ(page.extra["trees"][1]["pruned"], json::parse("[[2, 20]]"));
    EXPECT_EQ(page.extra["trees"][0]["pruned"], json::parse("[[2, 6]]"));
    EXPECT_EQ(stats.prunedContexts, 26u);
    EXPECT_FLOAT_EQ(stats.share, float(report::kHtmlMinShare));
    // The frames the kept contexts and the top rows use (here all four), and "(pruned)".
    EXPECT_EQ(page.profile["frames"].size(), 5u);
    EXPECT_EQ(page.extra["trees"][1]["tops"].size(), 4u);
}

// Contexts of equal share beyond the budget never starve a later tree of its heavy
// contexts.
TEST(HtmlPruning, TiesAtTheShareDoNotStarveLaterTrees) {
    report::Profile p = TimeProfile(4);
    p.metrics = {{"wall", "nanoseconds"}};
    p.defaultMetric = 0;
    for (std::uint64_t id = 1; id <= 2; ++id) {
        report::Tree &t = NewThread(p, id, "w");
        for (std::uint32_t f = 0; f < 4; ++f) t.nodes[t.Add(0, f, 1)].self = {id == 1 ? 100u : 100u + f * 1000};
    }
    p.Merge();
    report::HtmlOptions options;
    options.nodeBudget = 5;  // of 12: thread 1's four tie at 1/4
    std::ostringstream out;
    report::WriteHtml(p, out, options);
    const Page page = Scripts(out.str());
    // Thread 2's heaviest child (3100 of 6400) is kept whatever the ties before it.
    bool kept = false;
    for (const json &n : page.profile["threads"][1]["nodes"]) kept = kept || n[2] == 3100;
    EXPECT_TRUE(kept) << page.profile["threads"][1]["nodes"];
    std::size_t nodes = 0;
    for (const json &t : page.profile["threads"]) nodes += t["nodes"].size() - 1;
    nodes += page.profile["merged"]["nodes"].size() - 1;
    EXPECT_LE(nodes, 5u + 3u);  // the budget and at most one "(N pruned)" per tree
}

TEST(CollapsedPerThread, EachLineStartsWithItsThread) {
    report::Profile p = TimeProfile(3);
    for (std::uint64_t id : {1, 2, 3}) {
        report::Tree &t = NewThread(p, id, id == 1 ? "main" : id == 2 ? "pool worker" : "pool worker");
        std::uint32_t at = t.Add(0, 0, 2);
        t.nodes[at].self = {1, 10 * id};
        for (int i = 0; i < 3; ++i) {  // m1 recursing: folded as in the merged file
            at = t.Add(at, 1, 2);
            t.nodes[at].self = {1, id};
        }
    }
    p.threads[2].threadName = "";  // unnamed: "thread 3"
    p.Merge();
    std::ostringstream out;
    const report::CollapsedStats stats = report::WriteCollapsedPerThread(p, out, 1, 0.0);
    EXPECT_EQ(out.str(),
              "main;r.R.m0 10\nmain;r.R.m0;r.R.m1 3\n"
              "pool_worker;r.R.m0 20\npool_worker;r.R.m0;r.R.m1 6\n"
              "thread_3;r.R.m0 30\nthread_3;r.R.m0;r.R.m1 9\n");
    EXPECT_EQ(stats.lines, 6u);
    EXPECT_EQ(stats.foldedContexts, 6u);
    p.threads[2].threadName = "pool worker";  // two of that name: told apart by id
    std::ostringstream same;
    report::WriteCollapsedPerThread(p, same, 1, 0.0);
    EXPECT_NE(same.str().find("pool_worker_(id_2);r.R.m0 20\n"), std::string::npos) << same.str();
    EXPECT_NE(same.str().find("pool_worker_(id_3);r.R.m0 30\n"), std::string::npos) << same.str();
}

TEST(CollapsedPerThread, DepthCapCountsMethodsNotTheThread) {
    report::Profile p = TimeProfile(10);
    report::Tree &t = NewThread(p, 1, "main");
    std::uint32_t at = 0;
    for (std::uint32_t i = 0; i < 10; ++i) {
        at = t.Add(at, i, 2);
        t.nodes[at].self = {1, 1};
    }
    p.Merge();
    std::ostringstream out;
    const report::CollapsedStats stats = report::WriteCollapsedPerThread(p, out, 1, 0.0, 8);
    EXPECT_EQ(stats.cutContexts, 2u);
    EXPECT_EQ(stats.maxDepth, 8u);
    EXPECT_NE(out.str().find("main;r.R.m0;r.R.m1;r.R.m2;r.R.m3;r.R.m4;r.R.m5;r.R.m6;r.R.m7;[deeper_frames_cut];r.R.m9 1\n"),
              std::string::npos) << out.str();
}

// Two runs of one program whose frame tables are in different orders: main calls a
// (slower in the new run) and b; c only in the base, d only in the new one.
struct Runs {
    report::Profile base, now;
};

Runs TwoRuns() {
    Runs r;
    r.base = TimeProfile(0);
    r.now = TimeProfile(0);
    for (const char *name : {"main", "a", "b", "c"}) r.base.frames.push_back(report::Frame{name, "", "", "", "", 0});
    for (const char *name : {"d", "b", "a", "main"}) r.now.frames.push_back(report::Frame{name, "", "", "", "", 0});
    report::Tree &bt = NewThread(r.base, 1, "main");
    const std::uint32_t bm = bt.Add(0, 0, 2);
    bt.nodes[bm].self = {1, 100};
    bt.nodes[bt.Add(bm, 1, 2)].self = {10, 1000};
    bt.nodes[bt.Add(bm, 2, 2)].self = {10, 500};
    bt.nodes[bt.Add(bm, 3, 2)].self = {1, 50};
    report::Tree &nt = NewThread(r.now, 7, "main");
    const std::uint32_t nm = nt.Add(0, 3, 2);
    nt.nodes[nm].self = {1, 100};
    nt.nodes[nt.Add(nm, 2, 2)].self = {10, 4000};
    nt.nodes[nt.Add(nm, 1, 2)].self = {10, 300};
    nt.nodes[nt.Add(nm, 0, 2)].self = {1, 20};
    r.base.Merge();
    r.now.Merge();
    return r;
}

TEST(Diff, MetricInCommonOrWhyNot) {
    Runs r = TwoRuns();
    std::size_t b = 9, n = 9;
    EXPECT_EQ(report::DiffMetric(r.base, r.now, "", b, n), "");  // wall, measured in both
    EXPECT_EQ(b, 1u);
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(report::DiffMetric(r.base, r.now, "calls", b, n), "");
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(report::DiffMetric(r.base, r.now, "cpu", b, n), "no metric 'cpu' in the new profile; it has calls, wall");
    r.base.metrics = {{"calls", "count"}};
    EXPECT_EQ(report::DiffMetric(r.base, r.now, "", b, n),
              "no metric 'wall' in the base profile; it has calls (--metric NAME chooses another)");
    r.base.metrics = {{"calls", "count"}, {"wall", "bytes"}};
    EXPECT_EQ(report::DiffMetric(r.base, r.now, "wall", b, n),
              "metric 'wall' is in bytes in the base profile but in nanoseconds in the new one");
}

TEST(Diff, MethodsByNameLargestChangeFirst) {
    const Runs r = TwoRuns();
    const auto rows = report::DiffMethods(r.base, r.now, 1, 1);
    ASSERT_EQ(rows.size(), 5u);
    EXPECT_EQ(rows[0].method, "a");
    EXPECT_EQ(rows[0].base, 1000u);
    EXPECT_EQ(rows[0].now, 4000u);
    EXPECT_EQ(rows[1].method, "b");  // -200
    EXPECT_EQ(rows[2].method, "c");  // -50: gone
    EXPECT_EQ(rows[2].now, 0u);
    EXPECT_EQ(rows[3].method, "d");  // +20: new
    EXPECT_EQ(rows[4].method, "main");
    std::ostringstream out;
    report::WriteDiffTable(r.base, r.now, 1, 1, out, 10);
    EXPECT_EQ(out.str(),
              "diff of self wall per method: base 1.650 us, new 4.420 us (+2.770 us, x2.68); top 5 of 5 methods by change\n"
              "method  base us  new us  delta us  ratio\n"
              "a         1.000   4.000    +3.000  x4.00\n"
              "b         0.500   0.300    -0.200  x0.60\n"
              "c         0.050   0.000    -0.050   gone\n"
              "d         0.000   0.020    +0.020    new\n"
              "main      0.100   0.100         0  x1.00\n");
}

TEST(Diff, TreesMergedByCallPathAndFrameName) {
    const Runs r = TwoRuns();
    const report::Profile d = report::DiffProfile(r.base, r.now, 1, 1);
    ASSERT_EQ(d.metrics.size(), 2u);
    EXPECT_EQ(d.metrics[0].name, "new");
    EXPECT_EQ(d.metrics[1].name, "base");
    EXPECT_TRUE(d.threads.empty());
    std::map<std::string, std::vector<std::uint64_t>> byPath;
    for (std::size_t i = 1; i < d.merged.nodes.size(); ++i) {
        std::string path;
        for (std::uint32_t at = std::uint32_t(i); at != 0; at = d.merged.nodes[at].parent) {
            path.insert(0, "/" + d.frames[d.merged.nodes[at].frame].name);
        }
        byPath[path] = d.merged.nodes[i].self;
    }
    const std::map<std::string, std::vector<std::uint64_t>> want{
        {"/main", {100, 100}}, {"/main/a", {4000, 1000}}, {"/main/b", {300, 500}}, {"/main/c", {0, 50}}, {"/main/d", {20, 0}}};
    EXPECT_EQ(byPath, want);
    std::ostringstream page;
    report::WriteDiffHtml(r.base, r.now, 1, 1, "base.json", "new.json", page);
    const Page scripts = Scripts(page.str());
    EXPECT_EQ(scripts.extra["diff"], json::parse(R"({"metric": "wall", "base": "base.json", "new": "new.json"})"));
}

}  // namespace
