// The IMpi implementation: clients, registrations, filters, group state, data requests.
// Private to martini-core.
#pragma once

#include "martini/core/core.h"

#include <tbb/concurrent_hash_map.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace martini::core {

using namespace Martini::MPI;

class Registry final : public IMpi {
public:
    Registry(Core &core, Provider &provider);
    ~Registry();

    // ---- IMpi
    TResult RegisterEvent(TId clientId, IEventObserver &observer) override;
    TResult SetEventGroupFilter(TId clientId, TEventGroup group, IEventFilter &filter) override;
    TResult EnableEventGroup(TId clientId, TEventGroup group) override;
    TResult DisableEventGroup(TId clientId, TEventGroup group) override;
    TResult GetModuleInfo(TId clientId, TId moduleId, BitSet requested, SModuleInfo *pData) override;
    TResult GetClassInfo(TId clientId, TId classId, BitSet requested, SClassInfo *pData) override;
    TResult GetMethodInfo(TId clientId, TId methodId, BitSet requested, SMethodInfo *pData) override;
    TResult GetObjectInfo(TId clientId, TId objectId, BitSet requested, SObjectInfo *pData) override;
    TResult GetThreadInfo(TId clientId, TId threadId, BitSet requested, SThreadInfo *pData) override;
    TResult GetAllThreadsInfo(TId clientId, unsigned int maxDepth, BitSet requested,
                              SThreadInfoArray *pData) override;
    TResult GetObjectReferences(TId clientId, TId objectId, BitSet requested,
                                SObjectReferenceInfo *pData) override;
    TResult GetCompiledMethodInfo(TId clientId, UIOP codeAddress, BitSet requested,
                                  SCompiledMethodInfo *pData) override;
    TResult GetCurrentThreadId(TId clientId, TId *pThreadId) override;
    TResult GetRuntimeInfo(TId clientId, SRuntimeInfo *pInfo) override;
    TResult SuspendVM(TId clientId) override;
    TResult ResumeVM(TId clientId) override;
    TResult RunGC(TId clientId) override;
    unsigned int GetApiVersion() override { return MARTINI_MPI_VERSION; }
    TResult SetAllocationSamplingInterval(TId clientId, unsigned int bytes) override;

    // ---- Core's side
    Core::LoadResult Load(const ClientSpec &spec);
    Core::LoadResult Instantiate(std::string name, void *dlHandle, MPICL_Instantiate_t fn,
                                 const std::string &options);
    void FinishInit();
    void SetLive(bool live) { live_.store(live, std::memory_order_release); }
    ClientMask Interest(EEventGroup group, TId elementId, void *filterData);
    void CountReentrant() noexcept { reentrant_.fetch_add(1, std::memory_order_relaxed); }
    void ReportHandlerFailure(std::uint32_t clientIndex, TEventType event) noexcept;
    Diagnostics GetDiagnostics() const noexcept;
    unsigned ClientCount() const noexcept;
    std::string ClientName(TId clientId) const;
    std::uint64_t ClientHandlerFailures(TId clientId) const noexcept;

private:
    struct Registration {
        TEventType event;
        void *observer;  // I<Name>EventObserver*
        BitSet wanted;
    };
    struct Client {
        TId id = 0;
        std::uint32_t index = 0;
        std::string name;
        void *dlHandle = nullptr;
        std::vector<Registration> registrations;
        std::array<IEventFilter *, EG_LAST> filters{};
        std::array<bool, EG_LAST> groupEnabled{};
        std::atomic<std::uint64_t> handlerFailures{0};
        std::atomic<bool> failureLogged{false};
        std::atomic<bool> filterFailureLogged{false};
        // kFailed retires the id. Atomic: other threads read it (a client's own
        // threads may call IMpi while later clients are still loading).
        enum State { kInstantiating, kLoaded, kFailed };
        std::atomic<State> state{kInstantiating};
    };

    Client *Find(TId clientId) const noexcept;
    bool InInstantiateOf(const Client &client) const noexcept;
    TResult SetGroupEnabled(TId clientId, TEventGroup group, bool enabled);
    void CommitLocked(const Client &client);
    // Recomputes every event table's `enabled` mask; caller holds mutex_.
    void RecomputeEnabledLocked();
    bool live() const noexcept { return live_.load(std::memory_order_acquire); }
    TResult CheckRequest(TId clientId, const void *pData, BitSet requested, BitSet answerable) const;

    Core &core_;
    Provider &provider_;
    // Append-only during INIT. Fixed storage plus a published count, so that threads
    // reading clients (a loaded client's own threads) never race with an append.
    std::span<const std::unique_ptr<Client>> Clients() const noexcept {
        return {clients_.data(), clientCount_.load(std::memory_order_acquire)};
    }
    std::array<std::unique_ptr<Client>, kMaxClients> clients_;
    std::atomic<std::size_t> clientCount_{0};
    mutable std::mutex mutex_;                      // group toggles, loading
    std::mutex samplingMutex_;                      // the allocation sampling interval
    bool samplingSet_ = false;
    unsigned samplingInterval_ = 0;
    bool frozen_ = false;
    std::atomic<bool> live_{false};
    // The client whose MPICL_Instantiate runs on this thread (nullptr on every other
    // thread, so other threads' RegisterEvent calls see the wrong phase, race-free).
    static thread_local const Client *tInstantiating;

    using InterestCache = tbb::concurrent_hash_map<TId, ClientMask>;
    std::array<InterestCache, EG_LAST> interest_;

    std::atomic<std::uint64_t> reentrant_{0};
    std::atomic<std::uint64_t> handlerFailures_{0};
    std::atomic<std::uint64_t> filterFailures_{0};
    std::atomic<std::uint64_t> filterCalls_{0};
};

}  // namespace martini::core
