// The views of views.h: the HTML report of a large profile (pruned to a node budget,
// totals and top rows exact), collapsed stacks per thread.
#include "martini/report/profile.h"
#include "martini/report/views.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

}  // namespace
