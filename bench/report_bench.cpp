// The cost of writing a profile, per format (docs/performance.md, "Writing the
// profile"): seconds per file set, files per second, bytes per calling context.
//
// The profile is the shop example's size by default (examples/java/shop under the
// JVM, time mode: 4 threads, about 2,300 methods with JDK-length names, 40,000 merged
// calling contexts about 25 frames deep, 100,000 trace slices), built
// deterministically; MARTINI_BENCH_PROFILE=path/cgprof.json measures a saved profile
// instead:
//   build-release/bench/report_bench --benchmark_min_time=1
//   MARTINI_BENCH_PROFILE=martini-out/cgprof.json build-release/bench/report_bench
#include "martini/report/profile.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace report = martini::report;

namespace {

report::Profile Synthetic() {
    report::Profile p;
    p.tool = "cgprof";
    p.mode = "time";
    p.runtime = "OpenJDK 64-Bit Server VM 17 (synthetic)";
    p.metrics = {{"calls", "count"}, {"wall", "nanoseconds"}};
    p.defaultMetric = 1;
    std::mt19937_64 rng(42);
    const char *packages[] = {"java.util.concurrent.", "java.lang.invoke.", "jdk.internal.loader.", "java.util.",
                              "sun.nio.cs.", "java.lang.", "shop."};
    for (int i = 0; i < 2300; ++i) {
        report::Frame f;
        f.className = std::string(packages[i % 7]) + "SomeReasonablyNamedClass" + std::to_string(i / 7);
        f.method = "methodNumber" + std::to_string(i);
        f.name = f.className + "." + f.method;
        f.signature = "(Ljava/lang/Object;I)V";
        f.file = "SomeReasonablyNamedClass.java";
        f.line = 10 + i % 500;
        p.frames.push_back(std::move(f));
    }
    const std::size_t m = p.metrics.size();
    for (std::uint64_t tid = 1; tid <= 4; ++tid) {
        report::Tree t;
        t.threadId = tid;
        t.threadName = tid == 1 ? "main" : "worker-" + std::to_string(tid - 1);
        t.Clear(m);
        // Random walks from the root: an existing child most of the time, a new path
        // otherwise, about 25 frames deep.
        while (t.nodes.size() < 10200) {
            std::uint32_t at = 0;
            const int depth = 12 + int(rng() % 28);
            for (int d = 0; d < depth; ++d) {
                const auto &children = t.nodes[at].children;
                if (!children.empty() && rng() % 10 < 8) at = children[rng() % children.size()];
                else at = t.Add(at, std::uint32_t(rng() % p.frames.size()), m);
            }
            t.nodes[at].self[0] += 1 + rng() % 100;
            t.nodes[at].self[1] += rng() % 1'000'000;
        }
        p.threads.push_back(std::move(t));
    }
    p.Merge();
    std::uint64_t start = 1'000'000'000;
    for (int i = 0; i < 100000; ++i) {
        start += 1 + rng() % 1000;
        p.spans.push_back({1 + rng() % 4, std::uint32_t(rng() % p.frames.size()), start, rng() % 100000, "call"});
    }
    return p;
}

const report::Profile &Shop() {
    static const report::Profile profile = [] {
        report::Profile p;
        if (const char *path = std::getenv("MARTINI_BENCH_PROFILE"); path != nullptr && *path != '\0') {
            if (std::string e = report::ReadJsonFile(path, p); !e.empty()) {
                std::fprintf(stderr, "report_bench: %s\n", e.c_str());
                std::exit(1);
            }
            return p;
        }
        return Synthetic();
    }();
    return profile;
}

void WriteFormats(benchmark::State &state, unsigned formats) {
    const report::Profile &p = Shop();
    const std::string dir = (std::filesystem::temp_directory_path() / "martini-report-bench").string();
    std::uintmax_t bytes = 0;
    std::size_t files = 0;
    for (auto _ : state) {
        std::vector<std::string> written, errors;
        report::WriteFiles(p, dir, "bench", formats, written, errors);
        if (!errors.empty()) state.SkipWithError(errors[0].c_str());
        bytes = 0;
        for (const auto &path : written) bytes += std::filesystem::file_size(path);
        files = written.size();
    }
    std::filesystem::remove_all(dir);
    const double contexts = double(p.merged.nodes.size() - 1);
    state.counters["files_per_s"] = benchmark::Counter(double(files), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["MB"] = double(bytes) / 1e6;
    state.counters["bytes_per_context"] = double(bytes) / contexts;
    state.counters["contexts"] = contexts;
}

void BM_Json(benchmark::State &s) { WriteFormats(s, report::kJson); }
void BM_Html(benchmark::State &s) { WriteFormats(s, report::kHtml); }
void BM_Collapsed(benchmark::State &s) { WriteFormats(s, report::kCollapsed); }
void BM_Chrome(benchmark::State &s) { WriteFormats(s, report::kChrome); }
void BM_Pprof(benchmark::State &s) { WriteFormats(s, report::kPprof); }
void BM_DefaultJsonHtml(benchmark::State &s) { WriteFormats(s, report::kJson | report::kHtml); }
void BM_AllFive(benchmark::State &s) { WriteFormats(s, report::kAllFormats); }

BENCHMARK(BM_Json)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Html)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Collapsed)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Chrome)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pprof)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DefaultJsonHtml)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllFive)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
