#include "code_map.h"

#include "hotspot.h"

#include <sys/mman.h>

namespace martini::jvm {

bool CodeMap::IsCode(std::uintptr_t pc) {
    if (hotspot::InCodeCache(pc)) return true;
    const std::uintptr_t base = base_.load(std::memory_order_acquire);
    if (base == 0 || pc < base || pc - base >= kWindow) return false;
    const std::uintptr_t granule = (pc - base) / kGrain;
    return (bits_[granule / 8].load(std::memory_order_relaxed) >> (granule % 8)) & 1;
}

// The first range reported maps the bitmap; base_ is stored after bits_, with release,
// so that a handler that sees base_ sees bits_.
void CodeMap::Mark(std::uintptr_t start, std::size_t size, bool live) {
    if (size == 0) return;
    if (base_.load(std::memory_order_acquire) == 0) {
        void *bits = mmap(nullptr, kWindow / kGrain / 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (bits == MAP_FAILED) return;
        bits_ = static_cast<std::atomic<std::uint8_t> *>(bits);
        const std::uintptr_t half = kWindow / 2;
        base_.store(start > half ? (start - half) & ~(kGrain - 1) : kGrain, std::memory_order_release);
    }
    const std::uintptr_t base = base_.load(std::memory_order_acquire);
    if (start < base || start - base >= kWindow || start - base + size > kWindow) return;
    // Unloading clears whole granules: a neighbour's first or last 32 bytes may read
    // as no code until it is reported again (a retry missed, never a wrong one).
    for (std::uintptr_t g = (start - base) / kGrain; g <= (start - base + size - 1) / kGrain; ++g) {
        const auto bit = static_cast<std::uint8_t>(1u << (g % 8));
        if (live) bits_[g / 8].fetch_or(bit, std::memory_order_relaxed);
        else bits_[g / 8].fetch_and(static_cast<std::uint8_t>(~bit), std::memory_order_relaxed);
    }
}

void CodeMap::Loaded(std::uintptr_t start, std::size_t size, jmethodID method) {
    {
        std::lock_guard lock(mutex_);
        ranges_[start] = {size, method};
    }
    Mark(start, size, true);
}

void CodeMap::Unloaded(std::uintptr_t start) {
    std::size_t size = 0;
    {
        std::lock_guard lock(mutex_);
        auto it = ranges_.find(start);
        if (it == ranges_.end()) return;
        size = it->second.size;
        ranges_.erase(it);
    }
    Mark(start, size, false);
}

jmethodID CodeMap::MethodAt(std::uintptr_t pc) {
    if (hotspotTables_) return hotspot::CompiledMethodAt(pc);
    std::lock_guard lock(mutex_);
    auto it = ranges_.upper_bound(pc);
    if (it == ranges_.begin()) return nullptr;
    --it;
    return pc - it->first < it->second.size ? it->second.method : nullptr;
}

void CodeMap::Clear() {
    {
        std::lock_guard lock(mutex_);
        ranges_.clear();
    }
    if (bits_ != nullptr) madvise(bits_, kWindow / kGrain / 8, MADV_DONTNEED);  // zeroes
}

}  // namespace martini::jvm
