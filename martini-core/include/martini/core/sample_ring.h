// The ring a sampler's signal handler writes and one thread of the provider reads: a
// bounded multi-producer, single-consumer queue of preallocated slots (Dmitry Vyukov's
// bounded queue, one sequence number per slot).
//
// Why this design for both samplers: Mono's needs its samples in the order they were
// taken, one consumer and many producers (a signal on every sampled thread); the JVM's
// sorts each batch by time and wanted only a lock-free claim that cannot block the
// handler. A sequence per slot gives both: a claim is one compare-and-swap on the
// position, a full ring is seen at once (the sample is lost and counted by the caller,
// never waited for), and the consumer reads slots in claim order from where it stopped,
// without scanning the whole ring. A slot still being filled holds back the ones
// claimed after it until its handler returns (microseconds).
//
// Signal safety: Claim and Publish are async-signal-safe (atomics only; no lock, no
// allocation, no system call) and may run in any thread's signal handler, nested in
// none of their own (the sampler's signal is masked while its handler runs). Map
// allocates the slots (mmap) once, before the first Claim; nothing is allocated or
// freed after it, and the mapping is never unmapped (a late handler may still write).
//
// The consumer side (Peek, Release, Pop, Ready, AnyClaimed) runs on one thread at a
// time: the caller serialises it (a drain thread, or a lock of the caller's).
//
// Locks: none; each slot is handed over by its sequence (release on publish, acquire
// on read).
#pragma once

#include <sys/mman.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

namespace martini::core {

template <class Slot, std::size_t N>
class SampleRing {
    static_assert(N >= 2 && (N & (N - 1)) == 0, "the slot count is a power of two");

public:
    static constexpr std::size_t kSlots = N;

    SampleRing() {
        for (std::size_t i = 0; i < N; ++i) sequence_[i].store(i, std::memory_order_relaxed);
    }
    SampleRing(const SampleRing &) = delete;
    SampleRing &operator=(const SampleRing &) = delete;

    // Maps the slots (once; later calls return true). Not signal-safe: call it before
    // the handler can run. False when the memory cannot be mapped.
    bool Map() {
        if (slots_.load(std::memory_order_acquire) != nullptr) return true;
        void *mem = mmap(nullptr, sizeof(Slot) * N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) return false;
        auto *slots = static_cast<Slot *>(mem);
        for (std::size_t i = 0; i < N; ++i) new (&slots[i]) Slot;
        slots_.store(slots, std::memory_order_release);
        return true;
    }
    bool Mapped() const { return slots_.load(std::memory_order_acquire) != nullptr; }

    // Producer (async-signal-safe): a slot to fill, then Publish; nullptr when the ring
    // is full or not mapped.
    Slot *Claim() {
        Slot *slots = slots_.load(std::memory_order_acquire);
        if (slots == nullptr) return nullptr;
        std::size_t pos = enqueue_.load(std::memory_order_relaxed);
        for (;;) {
            const std::size_t seq = sequence_[pos & (N - 1)].load(std::memory_order_acquire);
            const auto diff = static_cast<std::intptr_t>(seq) - static_cast<std::intptr_t>(pos);
            if (diff == 0) {
                if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) return &slots[pos & (N - 1)];
            } else if (diff < 0) {
                return nullptr;  // full: the consumer has not freed this slot yet
            } else {
                pos = enqueue_.load(std::memory_order_relaxed);  // another producer took it
            }
        }
    }
    // Producer (async-signal-safe): the slot Claim gave is filled. Release: the
    // consumer that sees the new sequence sees the slot's contents.
    void Publish(Slot *slot) {
        std::atomic<std::size_t> &seq = sequence_[Index(slot)];
        // Claimed at position p, the slot's sequence is p until this store.
        seq.store(seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }

    // Consumer: the k-th slot from the consumer's position, when it and every one
    // before it are published; else nullptr. The slot stays the consumer's to read
    // until Release.
    Slot *Peek(std::size_t k) const {
        if (k >= N) return nullptr;
        const std::size_t pos = dequeue_ + k;
        if (sequence_[pos & (N - 1)].load(std::memory_order_acquire) != pos + 1) return nullptr;
        return &slots_.load(std::memory_order_relaxed)[pos & (N - 1)];
    }
    // Consumer: the first `count` slots Peek gave go back to the producers.
    void Release(std::size_t count) {
        for (std::size_t i = 0; i < count; ++i, ++dequeue_) {
            sequence_[dequeue_ & (N - 1)].store(dequeue_ + N, std::memory_order_release);
        }
    }
    // Consumer: the oldest published slot copied to `out` and released; false when
    // there is none.
    bool Pop(Slot &out) {
        const Slot *slot = Mapped() ? Peek(0) : nullptr;
        if (slot == nullptr) return false;
        out = *slot;
        Release(1);
        return true;
    }
    // Consumer: whether a published slot waits.
    bool Ready() const { return Mapped() && Peek(0) != nullptr; }
    // Consumer: whether a slot is claimed and not yet published (a handler still
    // filling it).
    bool AnyClaimed() const {
        const std::size_t end = enqueue_.load(std::memory_order_acquire);
        for (std::size_t pos = dequeue_; pos != end; ++pos) {
            if (sequence_[pos & (N - 1)].load(std::memory_order_acquire) != pos + 1) return true;
        }
        return false;
    }

private:
    std::size_t Index(const Slot *slot) const {
        return static_cast<std::size_t>(slot - slots_.load(std::memory_order_relaxed));
    }

    std::atomic<Slot *> slots_{nullptr};  // N slots, mapped once, never unmapped
    std::array<std::atomic<std::size_t>, N> sequence_;
    alignas(64) std::atomic<std::size_t> enqueue_{0};  // the producers' next position
    alignas(64) std::size_t dequeue_ = 0;              // the consumer's
};

}  // namespace martini::core
