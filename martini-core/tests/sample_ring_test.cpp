// The sample ring: many producers, one consumer, claim order kept, a full ring refuses.
#include "martini/core/sample_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

using martini::core::SampleRing;

namespace {
struct Slot {
    std::uint32_t producer = 0;
    std::uint32_t seq = 0;
};
}  // namespace

TEST(SampleRing, PopsInClaimOrderAndRefusesWhenFull) {
    static SampleRing<Slot, 8> ring;
    ASSERT_TRUE(ring.Map());
    EXPECT_FALSE(ring.Ready());
    for (std::uint32_t i = 0; i < 8; ++i) {
        Slot *s = ring.Claim();
        ASSERT_NE(s, nullptr);
        s->seq = i;
        ring.Publish(s);
    }
    EXPECT_EQ(ring.Claim(), nullptr) << "a full ring gives no slot";
    Slot out;
    for (std::uint32_t i = 0; i < 8; ++i) {
        ASSERT_TRUE(ring.Pop(out));
        EXPECT_EQ(out.seq, i);
    }
    EXPECT_FALSE(ring.Pop(out));
}

TEST(SampleRing, ClaimedSlotHoldsBackLaterOnesUntilPublished) {
    static SampleRing<Slot, 4> ring;
    ASSERT_TRUE(ring.Map());
    Slot *first = ring.Claim();
    Slot *second = ring.Claim();
    ring.Publish(second);
    EXPECT_TRUE(ring.AnyClaimed());
    EXPECT_EQ(ring.Peek(0), nullptr);
    ring.Publish(first);
    EXPECT_FALSE(ring.AnyClaimed());
    EXPECT_EQ(ring.Peek(0), first);
    EXPECT_EQ(ring.Peek(1), second);
    EXPECT_EQ(ring.Peek(2), nullptr);
    ring.Release(2);
    EXPECT_FALSE(ring.Ready());
}

TEST(SampleRing, EverySampleOfManyProducersIsReadOnceOrCountedLost) {
    static SampleRing<Slot, 64> ring;
    ASSERT_TRUE(ring.Map());
    constexpr std::uint32_t kProducers = 4, kEach = 20000;
    std::atomic<std::uint64_t> lost{0};
    std::atomic<int> done{0};
    std::vector<std::thread> producers;
    for (std::uint32_t p = 0; p < kProducers; ++p) {
        producers.emplace_back([&, p] {
            for (std::uint32_t i = 0; i < kEach; ++i) {
                if (Slot *s = ring.Claim()) {
                    s->producer = p;
                    s->seq = i;
                    ring.Publish(s);
                } else {
                    lost.fetch_add(1);
                }
            }
            done.fetch_add(1);
        });
    }
    std::vector<std::int64_t> last(kProducers, -1);
    std::uint64_t read = 0;
    Slot out;
    for (;;) {
        const bool finished = done.load() == int(kProducers);
        while (ring.Pop(out)) {
            ASSERT_LT(out.producer, kProducers);
            EXPECT_GT(std::int64_t(out.seq), last[out.producer]) << "one producer's samples in its order";
            last[out.producer] = out.seq;
            ++read;
        }
        if (finished) break;
    }
    for (auto &t : producers) t.join();
    EXPECT_EQ(read + lost.load(), std::uint64_t{kProducers} * kEach);
}
