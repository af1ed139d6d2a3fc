// Kernel frames for the samplers, header only. Where perf_event_open lets a thread's
// task-clock event count kernel time (perf_event_paranoid at most 1, or root), the
// event also records the kernel's call chain at each period (PERF_SAMPLE_CALLCHAIN,
// the user part excluded: the sampler walks that itself) into a ring buffer mapped per
// thread. The same period's signal runs the sampler's handler on that thread, which
// takes the newest record's kernel frames: the functions the thread was in when it was
// interrupted inside the kernel (a system call, a page fault), innermost first; none
// when it was in user code.
//
// Owns: the table of mapped rings by thread id (KernelRings), atomics the handler
// reads. Locks: none; Take is async-signal-safe, the rest runs outside the handler. A
// ring taken out of the table is unmapped only later (the caller keeps it a while),
// so that a handler that looked it up just before still reads mapped memory.
#pragma once

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace martini::core {

// Kernel frames unless MARTINI_SAMPLING_KERNEL=0 (for measuring their cost). Read once
// outside signal handlers first.
inline bool KernelStacksChosen() {
    static const bool chosen = [] {
        const char *kernel = std::getenv("MARTINI_SAMPLING_KERNEL");
        return kernel == nullptr || std::strcmp(kernel, "0") != 0;
    }();
    return chosen;
}

// The ring: one header page, then one data page (a record with 127 kernel frames takes
// 1 KiB, and each signal empties the ring).
inline constexpr std::size_t kKernelRingDataPages = 1;

inline std::size_t KernelRingBytes() { return (1 + kKernelRingDataPages) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

// The ring of an event opened with PERF_SAMPLE_CALLCHAIN; nullptr when it cannot be
// mapped (perf_event_mlock_kb spent by an unprivileged user).
inline void *MapKernelRing(int fd) {
    void *ring = mmap(nullptr, KernelRingBytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return ring == MAP_FAILED ? nullptr : ring;
}

inline void UnmapKernelRing(void *ring) {
    if (ring != nullptr) munmap(ring, KernelRingBytes());
}

// Async-signal-safe, on the ring's own thread: the kernel frames of the newest sample
// record (at most `max`, innermost first) into `out`; the ring emptied.
inline int TakeKernelFrames(void *ring, std::uintptr_t *out, int max) {
    auto *page = static_cast<perf_event_mmap_page *>(ring);
    const std::uint64_t head = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
    std::uint64_t tail = page->data_tail;
    const std::uint64_t size = page->data_size != 0 ? page->data_size : kKernelRingDataPages * 4096;
    const char *data = static_cast<const char *>(ring) + (page->data_offset != 0 ? page->data_offset : 4096);
    const auto word = [&](std::uint64_t at) {  // records are 8-byte aligned: a word never wraps
        std::uint64_t v;
        std::memcpy(&v, data + at % size, sizeof v);
        return v;
    };
    std::uint64_t newest = 0;
    bool found = false;
    while (tail + sizeof(perf_event_header) <= head) {
        perf_event_header h;
        std::memcpy(&h, data + tail % size, sizeof h);
        if (h.size < sizeof h || tail + h.size > head) break;
        if (h.type == PERF_RECORD_SAMPLE) {
            newest = tail;
            found = true;
        }
        tail += h.size;
    }
    int n = 0;
    if (found) {
        // PERF_SAMPLE_CALLCHAIN alone: nr, then nr addresses; context markers
        // (PERF_CONTEXT_KERNEL, ...) stand among them.
        const std::uint64_t nr = word(newest + sizeof(perf_event_header));
        for (std::uint64_t i = 0; i < nr && i < 512 && n < max; ++i) {
            const std::uint64_t ip = word(newest + sizeof(perf_event_header) + 8 * (i + 1));
            if (ip >= static_cast<std::uint64_t>(PERF_CONTEXT_MAX)) continue;
            out[n++] = static_cast<std::uintptr_t>(ip);
        }
    }
    __atomic_store_n(&page->data_tail, head, __ATOMIC_RELEASE);
    return n;
}

// The mapped rings by thread id (modulo the table: a thread whose slot another holds
// gets no kernel frames).
class KernelRings {
public:
    static void Register(pid_t tid, void *ring) {
        const std::size_t i = Slot(tid);
        tid_[i].store(0, std::memory_order_release);
        ring_[i].store(ring, std::memory_order_release);
        tid_[i].store(tid, std::memory_order_release);
    }
    // The thread's ring out of the table (the caller unmaps it later).
    static void Unregister(pid_t tid, void *ring) {
        const std::size_t i = Slot(tid);
        if (ring_[i].load(std::memory_order_acquire) != ring) return;
        pid_t expected = tid;
        tid_[i].compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
    }
    // Async-signal-safe, on thread `tid` itself: its kernel frames, or 0.
    static int Take(pid_t tid, std::uintptr_t *out, int max) {
        const std::size_t i = Slot(tid);
        if (tid_[i].load(std::memory_order_acquire) != tid) return 0;
        void *ring = ring_[i].load(std::memory_order_acquire);
        if (tid_[i].load(std::memory_order_acquire) != tid || ring == nullptr) return 0;
        return TakeKernelFrames(ring, out, max);
    }

private:
    static constexpr std::size_t kSlots = 4096;
    static std::size_t Slot(pid_t tid) { return static_cast<std::size_t>(tid) % kSlots; }
    static inline std::array<std::atomic<pid_t>, kSlots> tid_{};
    static inline std::array<std::atomic<void *>, kSlots> ring_{};
};

}  // namespace martini::core
