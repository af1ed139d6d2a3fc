// core::ThreadRegistry: ids from 1 in order, records kept after their thread ends, the
// live record of an OS thread (a reused OS id names the new thread), and many threads
// adding, ending and listing at once (also run under ThreadSanitizer: scripts/tsan.sh).
#include "martini/core/thread_registry.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace martini::core {
namespace {

using namespace Martini::MPI;

struct Record : ThreadRecordBase {
    int payload = 0;
};

TEST(ThreadRegistry, IdsRecordsAndOsKeys) {
    ThreadRegistry<Record> threads;
    TId first = 0, second = 0;
    {
        const auto lock = threads.Locked();
        Record &a = threads.Add(lock, 100);
        a.name = "main";
        first = a.id;
        EXPECT_EQ(threads.Live(lock, 100), &a);
        threads.End(lock, a);
        EXPECT_EQ(threads.Live(lock, 100), nullptr);
        Record &b = threads.Add(lock, 100);  // the OS reused its id
        b.name = "worker";
        b.parent = first;
        second = b.id;
        EXPECT_EQ(threads.Live(lock, 100), &b);
    }
    EXPECT_EQ(first, 1u);
    EXPECT_EQ(second, 2u);
    std::vector<TId> live;
    threads.List(live);
    EXPECT_EQ(live, std::vector<TId>{2});
    ThreadFacts f;
    bool alive = true;
    ASSERT_EQ(threads.DescribeRecorded(1, f, alive), MRTE_RESULT_OK);
    EXPECT_FALSE(alive);
    EXPECT_EQ(f.name, "main");
    EXPECT_EQ(f.state, TS_TERMINATED);
    ThreadFacts g;
    ASSERT_EQ(threads.DescribeRecorded(2, g, alive), MRTE_RESULT_OK);
    EXPECT_TRUE(alive);
    EXPECT_EQ(g.parentThreadId, 1u);
    EXPECT_NE(g.given & DR_THREAD_PARENT_ID, 0u);
    EXPECT_EQ(threads.DescribeRecorded(3, g, alive), MRTE_ERROR_ILLEGAL_ID);
    EXPECT_EQ(threads.DescribeRecorded(0, g, alive), MRTE_ERROR_ILLEGAL_ID);
}

TEST(ThreadRegistry, HiddenThreadsAreNeitherListedNorDescribed) {
    ThreadRegistry<Record> threads;
    {
        const auto lock = threads.Locked();
        threads.Add(lock, 1).hidden = true;
        threads.Add(lock, 2);
    }
    std::vector<TId> live;
    threads.List(live);
    EXPECT_EQ(live, std::vector<TId>{2});
    ThreadFacts f;
    bool alive = false;
    EXPECT_EQ(threads.DescribeRecorded(1, f, alive), MRTE_ERROR_ILLEGAL_ID);
}

TEST(ThreadRegistry, ManyThreadsAtOnce) {
    ThreadRegistry<Record> threads;
    constexpr int kThreads = 8, kEach = 500;
    std::vector<std::thread> workers;
    for (int w = 0; w < kThreads; ++w) {
        workers.emplace_back([&threads, w] {
            std::vector<TId> seen;
            for (int i = 0; i < kEach; ++i) {
                const std::uint64_t os = static_cast<std::uint64_t>(w) * 1000 + i + 1;
                Record *r;
                {
                    const auto lock = threads.Locked();
                    r = &threads.Add(lock, os);
                    r->name = std::to_string(os);
                }
                r->payload = i;  // the thread's own field, without the lock
                threads.List(seen);
                if (i % 2 == 0) {
                    const auto lock = threads.Locked();
                    threads.End(lock, *r);
                }
                (void)threads.NameOf(r->id);
            }
        });
    }
    for (std::thread &t : workers) t.join();
    std::vector<TId> live;
    threads.List(live);
    EXPECT_EQ(live.size(), static_cast<std::size_t>(kThreads * kEach / 2));
    ThreadFacts f;
    bool alive = false;
    EXPECT_EQ(threads.DescribeRecorded(kThreads * kEach, f, alive), MRTE_RESULT_OK);
    EXPECT_EQ(threads.DescribeRecorded(kThreads * kEach + 1, f, alive), MRTE_ERROR_ILLEGAL_ID);
}

}  // namespace
}  // namespace martini::core
