// ThreadRegistry: a provider's threads as Martini numbers them. Ids come from a
// counter (1, 2, ...: an OS or a runtime reuses its thread ids, Martini never does); a
// thread's record outlives it (a data request may name a thread that has ended); the
// live ones are found by the runtime's key of their OS thread (gettid, pthread_t). It
// answers what every provider answers alike: the list of live threads, and a thread's
// name, group, parent and end.
//
// What stays the provider's: its Record (derived from ThreadRecordBase: a JVM's
// java.lang.Thread, a Mono thread's shadow stack, an interpreter's virtual thread
// handle), its per-thread context behind one initial-exec thread-local pointer (the
// hot path reads that, never the registry), and how it learns a thread's name.
//
// Locks: one mutex guards every record. Records are never freed nor moved before the
// registry is, so a record's address may be kept (and its provider-owned fields read
// by the thread it belongs to) without the lock.
#pragma once

#include "martini/core/provider.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace martini::core {

struct ThreadRecordBase {
    TId id = 0;
    std::string name;
    std::string group;
    TId parent = 0;           // the thread that started it; 0: not known
    std::uint64_t osKey = 0;  // the runtime's key of its OS thread; 0: none (a virtual thread)
    bool alive = true;
    bool hidden = false;      // the provider's own thread: not listed, not described
};

template <class Record>
class ThreadRegistry {
    static_assert(std::is_base_of_v<ThreadRecordBase, Record>);

public:
    using Lock = std::unique_lock<std::mutex>;

    // ---- Under Lock() ------------------------------------------------------------
    [[nodiscard]] Lock Locked() const { return Lock(mutex_); }
    // A new record with the next id; the live record of `osKey` from now (0: none).
    Record &Add(const Lock &, std::uint64_t osKey = 0) {
        Record &r = records_.emplace_back();
        r.id = static_cast<TId>(records_.size());
        r.osKey = osKey;
        if (osKey != 0) liveByOs_[osKey] = r.id;
        return r;
    }
    Record *Find(const Lock &, TId id) {
        return id != 0 && id <= records_.size() ? &records_[static_cast<std::size_t>(id - 1)] : nullptr;
    }
    // The live record of an OS thread, or null.
    Record *Live(const Lock &l, std::uint64_t osKey) {
        const auto it = liveByOs_.find(osKey);
        return it != liveByOs_.end() ? Find(l, it->second) : nullptr;
    }
    // The thread has ended: not listed any more; its OS key may name a new thread.
    void End(const Lock &, Record &r) {
        r.alive = false;
        const auto it = liveByOs_.find(r.osKey);
        if (it != liveByOs_.end() && it->second == r.id) liveByOs_.erase(it);
    }
    template <class F>
    void ForEach(const Lock &, F &&f) {
        for (Record &r : records_) f(r);
    }

    // ---- Taking the lock themselves ------------------------------------------------
    // The live threads clients may see, by id.
    Martini::MPI::TResult List(std::vector<TId> &out) const {
        const Lock l = Locked();
        out.clear();
        for (const Record &r : records_) {
            if (r.alive && !r.hidden) out.push_back(r.id);
        }
        return Martini::MPI::MRTE_RESULT_OK;
    }
    std::string NameOf(TId id) const {
        const Lock l = Locked();
        return id != 0 && id <= records_.size() ? records_[static_cast<std::size_t>(id - 1)].name : std::string();
    }
    // What the record tells of a thread: its name and group (when known), its parent,
    // and TS_TERMINATED when it has ended; `alive` says whether the provider has more
    // to ask of the runtime, and `record` (when not null) the record itself (records
    // stay where they are). MRTE_ERROR_ILLEGAL_ID for an unknown or hidden thread.
    Martini::MPI::TResult DescribeRecorded(TId id, ThreadFacts &f, bool &alive, const Record **record = nullptr) const {
        using namespace Martini::MPI;
        const Lock l = Locked();
        if (id == 0 || id > records_.size()) return MRTE_ERROR_ILLEGAL_ID;
        const Record &r = records_[static_cast<std::size_t>(id - 1)];
        if (r.hidden) return MRTE_ERROR_ILLEGAL_ID;
        f.name = r.name;
        f.given |= DR_THREAD_NAME;
        if (!r.group.empty()) {
            f.group = r.group;
            f.given |= DR_THREAD_GROUP;
        }
        if (r.parent != 0) {
            f.parentThreadId = r.parent;
            f.given |= DR_THREAD_PARENT_ID;
        }
        alive = r.alive;
        if (record != nullptr) *record = &r;
        if (!alive) {
            f.state = TS_TERMINATED;
            f.given |= DR_THREAD_STATE;
        }
        return MRTE_RESULT_OK;
    }

private:
    mutable std::mutex mutex_;
    std::deque<Record> records_;  // id = index + 1
    std::unordered_map<std::uint64_t, TId> liveByOs_;
};

}  // namespace martini::core
