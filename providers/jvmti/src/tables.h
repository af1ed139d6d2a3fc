// The id-indexed tables the probes read without a lock: RecordTable (records by id,
// appended under their owner's lock) and InterestTable (a client mask per method id).
#pragma once

#include "vm.h"

#include <array>
#include <atomic>

namespace martini::jvm {

// Records by id (ids start at 1). Reads are lock-free (the probes read the record
// of the method they are in, or of the class they construct); appends happen under
// the owning component's lock and are published before the instrumented class reaches the JVM.
template <class Record, TId kChunkSize, TId kChunks>
class RecordTable {
public:
    Record *Get(TId id) const noexcept {
        if (id == 0 || id > kChunkSize * kChunks) return nullptr;
        const TId i = id - 1;
        Record *chunk = chunks_[i / kChunkSize].load(std::memory_order_acquire);
        return chunk != nullptr ? &chunk[i % kChunkSize] : nullptr;
    }
    // Caller holds the owning component's lock. Returns 0 when the table is full.
    TId Add() {
        const TId i = size_;
        if (i >= kChunkSize * kChunks) return 0;
        if (chunks_[i / kChunkSize].load(std::memory_order_relaxed) == nullptr) {
            // Published with release: a probe that reads the id (from code the JVM
            // loads after this returns) sees a constructed chunk.
            chunks_[i / kChunkSize].store(new Record[kChunkSize], std::memory_order_release);
        }
        ++size_;
        return i + 1;
    }
    TId size() const noexcept { return size_; }

private:
    std::array<std::atomic<Record *>, kChunks> chunks_{};
    TId size_ = 0;
};

// The call-graph filters' answer per method id, decided once when the method is
// instrumented and read by its probes on every call. Kept apart from the method
// records, 8 bytes a method, so the probes' lookups share cache lines (in a
// MethodRecord, each call touched a line of its own: measured with perf on javac).
class InterestTable {
public:
    static constexpr TId kChunkSize = 4096, kChunks = 16384;  // as ClassRegistry::MethodTable
    ~InterestTable() {
        for (auto &c : chunks_) delete[] c.load(std::memory_order_relaxed);
    }
    ClientMask Get(TId id) const noexcept {
        const TId i = id - 1;  // id 0 wraps around: out of range
        if (i >= kChunkSize * kChunks) return 0;
        const std::atomic<ClientMask> *chunk = chunks_[i / kChunkSize].load(std::memory_order_acquire);
        return chunk != nullptr ? chunk[i % kChunkSize].load(std::memory_order_relaxed) : 0;
    }
    // Before the method's instrumented code reaches the JVM (which publishes it).
    void Set(TId id, ClientMask mask) {
        const TId i = id - 1;
        if (i >= kChunkSize * kChunks) return;
        std::atomic<std::atomic<ClientMask> *> &slot = chunks_[i / kChunkSize];
        std::atomic<ClientMask> *chunk = slot.load(std::memory_order_acquire);
        if (chunk == nullptr) {
            auto *fresh = new std::atomic<ClientMask>[kChunkSize]();
            if (slot.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) {
                chunk = fresh;
            } else {
                delete[] fresh;  // another thread's chunk is in `chunk`
            }
        }
        chunk[i % kChunkSize].store(mask, std::memory_order_relaxed);
    }

private:
    std::array<std::atomic<std::atomic<ClientMask> *>, kChunks> chunks_{};
};
}  // namespace martini::jvm
