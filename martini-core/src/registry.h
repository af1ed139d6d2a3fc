// The IMpi implementation: clients, registrations, filters, group state, data requests.
// Private to martini-core.
#pragma once

#include <sys/types.h>

#include "martini/core/core.h"

#include <tbb/concurrent_hash_map.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace martini::core {

using namespace Martini::MPI;

// Runs an IMpi function's body so that nothing escapes it: a provider's facts may
// need memory, and running out is a result code for the client, not a crash.
template <class Body>
TResult Guarded(Body &&body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return MRTE_ERROR_OUT_OF_MEMORY;
    } catch (...) {
        return MRTE_ERROR_FAIL;
    }
}

class Registry final : public IMpi {
public:
    Registry(Core &core, Provider &provider);
    ~Registry();

    // ---- IMpi
    TResult RegisterEvent(TId clientId, IEventObserver &observer) noexcept override;
    TResult SetEventGroupFilter(TId clientId, TEventGroup group, IEventFilter &filter) noexcept override;
    TResult EnableEventGroup(TId clientId, TEventGroup group) noexcept override;
    TResult DisableEventGroup(TId clientId, TEventGroup group) noexcept override;
    TResult GetModuleInfo(TId clientId, TId moduleId, BitSet requested, SModuleInfo *pData) noexcept override;
    TResult GetClassInfo(TId clientId, TId classId, BitSet requested, SClassInfo *pData) noexcept override;
    TResult GetMethodInfo(TId clientId, TId methodId, BitSet requested, SMethodInfo *pData) noexcept override;
    TResult GetObjectInfo(TId clientId, TId objectId, BitSet requested, SObjectInfo *pData) noexcept override;
    TResult GetThreadInfo(TId clientId, TId threadId, BitSet requested, SThreadInfo *pData) noexcept override;
    TResult GetAllThreadsInfo(TId clientId, unsigned int maxDepth, BitSet requested,
                              SThreadInfoArray *pData) noexcept override;
    TResult GetObjectReferences(TId clientId, TId objectId, BitSet requested,
                                SObjectReferenceInfo *pData) noexcept override;
    TResult GetCompiledMethodInfo(TId clientId, UIOP codeAddress, BitSet requested,
                                  SCompiledMethodInfo *pData) noexcept override;
    TResult GetCurrentThreadId(TId clientId, TId *pThreadId) noexcept override;
    TResult GetRuntimeInfo(TId clientId, SRuntimeInfo *pInfo) noexcept override;
    TResult SuspendVM(TId clientId) noexcept override;
    TResult ResumeVM(TId clientId) noexcept override;
    TResult RunGC(TId clientId) noexcept override;
    unsigned int GetApiVersion() noexcept override { return MARTINI_MPI_VERSION; }
    TResult SetAllocationSamplingInterval(TId clientId, unsigned int bytes) noexcept override;
    TResult SetSamplingRate(TId clientId, unsigned int hz, ESamplingClock clock) noexcept override;
    TResult RequestCoverage(TId clientId, BitSet items) noexcept override;
    TResult GetCoveredMethods(TId clientId, SIdArray *pData) noexcept override;
    TResult GetCoverageInfo(TId clientId, TId methodId, BitSet requested, SCoverageInfo *pData) noexcept override;

    // ---- Core's side
    Provider &provider() noexcept { return provider_; }
    Core::LoadResult Load(const ClientSpec &spec);
    // The library at `path` is one a client was loaded from (its device and inode).
    bool LoadedAlready(const std::string &path) const;
    // dlopen of a private copy of the library (a second instance); null and `error` set
    // when the copy cannot be made, null with dlerror() when it cannot be loaded.
    static void *OpenPrivateCopy(const std::string &path, std::string &error);
    Core::LoadResult Instantiate(std::string name, void *dlHandle, MPICL_Instantiate_t fn,
                                 const std::string &options);
    void FinishInit();
    void SetLive(bool live) { live_.store(live, std::memory_order_release); }
    // Sets every event's enabled mask to 0 for good; returns VmShutdown's mask as it
    // was (0 when delivery had already stopped).
    ClientMask StopDelivery() noexcept;
    ClientMask Interest(EEventGroup group, TId elementId, void *filterData);
    BitSet CoverageRequested() const noexcept { return coverageRequested_.load(std::memory_order_acquire); }
    BitSet CoverageItemsOf(ClientMask clients) const noexcept;
    void CountReentrant() noexcept { reentrant_.fetch_add(1, std::memory_order_relaxed); }
    void ReportHandlerFailure(std::uint32_t clientIndex, TEventType event) noexcept;
    Diagnostics GetDiagnostics() const noexcept;
    unsigned ClientCount() const noexcept;
    std::string ClientName(TId clientId) const;
    std::uint64_t ClientHandlerFailures(TId clientId) const noexcept;

private:
    struct Registration {
        TEventType event = EV_NONE;
        void *observer = nullptr;  // I<Name>EventObserver*
        BitSet wanted = 0;
    };
    struct Client {
        TId id = 0;
        std::uint32_t index = 0;
        std::string name;
        void *dlHandle = nullptr;
        std::array<Registration, EV_LAST> registrations{};  // one per event at most
        std::size_t registrationCount = 0;
        std::span<const Registration> Registrations() const noexcept {
            return {registrations.data(), registrationCount};
        }
        std::array<IEventFilter *, EG_LAST> filters{};
        std::array<bool, EG_LAST> groupEnabled{};
        BitSet coverageItems = 0;  // IMpi::RequestCoverage (INSTANTIATE only)
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
    TResult SetGroupEnabled(TId clientId, TEventGroup group, bool enabled) noexcept;
    void CommitLocked(const Client &client);
    // Recomputes every event table's `enabled` mask; caller holds mutex_.
    void RecomputeEnabledLocked();
    bool live() const noexcept { return live_.load(std::memory_order_acquire); }
    TResult CheckRequest(TId clientId, const void *pData, BitSet requested, BitSet answerable) const noexcept;

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
    std::vector<std::pair<dev_t, ino_t>> loadedFiles_;  // the client libraries loaded (under mutex_)
    std::mutex samplingMutex_;                      // the allocation sampling interval
    bool samplingSet_ = false;
    unsigned samplingInterval_ = 0;
    unsigned samplingHz_ = 0;                       // SampleHit's rate (0: none asked); samplingMutex_
    ESamplingClock samplingClock_ = SC_CPU;
    bool frozen_ = false;
    bool stopped_ = false;  // Shutdown: the enabled masks stay 0
    std::atomic<bool> live_{false};
    // The client whose MPICL_Instantiate runs on this thread (nullptr on every other
    // thread, so other threads' RegisterEvent calls see the wrong phase, race-free).
    static thread_local const Client *tInstantiating;

    using InterestCache = tbb::concurrent_hash_map<TId, ClientMask>;
    std::array<InterestCache, EG_LAST> interest_;

    // The methods some client covers, in the order they were instrumented, with the
    // clients covering each (coverageMutex_): GetCoveredMethods lists them.
    std::mutex coverageMutex_;
    std::vector<std::pair<TId, ClientMask>> covered_;
    std::atomic<BitSet> coverageRequested_{0};

    std::atomic<std::uint64_t> reentrant_{0};
    std::atomic<std::uint64_t> handlerFailures_{0};
    std::atomic<std::uint64_t> filterFailures_{0};
    std::atomic<std::uint64_t> filterCalls_{0};
};

}  // namespace martini::core
