// martini::core::Core: the registry of clients and the event dispatcher.
//
// One Core per process, created by the provider. Lifecycle (all on one thread, the
// runtime's initialization thread, unless said otherwise):
//   Core core(provider);
//   LoadClients(core, config, dir);   // phase INIT: clients register in Instantiate
//   core.FinishInit();                // freezes the dispatch tables
//   core.SetLive(true);               // VmInit: data requests allowed
//   ... Raise<...>(...) from any thread ...
//   core.Shutdown();                  // the runtime is ending: VmShutdown, then DEAD
//
// FinishInit() must happen-before the first Raise on every thread (call it before the
// runtime starts the threads that raise events, or publish it with a release/acquire
// pair of the provider's own). That is why the hot path may use relaxed loads.
#pragma once

#include "martini/core/client_spec.h"
#include "martini/core/provider.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace martini::core {

using Martini::MPI::EEventGroup;

// Per-thread state of the dispatcher. constinit (no dynamic initialization), so an
// access is one initial-exec TLS load, with no TLS wrapper call and no init guard.
// Defined once, in the core.
struct ThreadState {
    std::uint32_t handlerDepth = 0;  // > 0 while this thread runs a Martini handler
};
extern constinit thread_local ThreadState tThreadState __attribute__((tls_model("initial-exec")));

// GCC 12's UBSan reports "member access within null pointer" for writes to an extern
// initial-exec TLS variable (a false positive: the address is the thread pointer plus
// a link-time offset, and the writes land). The delivery loops are exempt from that one
// check; every other sanitizer check stays on.
#define MARTINI_TLS_ACCESS __attribute__((no_sanitize("null")))

// Martini's own work on this thread. While one lives, events raised on the thread are
// not delivered (they are counted with the re-entrant ones), as inside a handler. A
// provider holds one around the runtime calls it makes for itself (a JNI call that
// runs Java code, a class load it causes) and on threads of its own: Martini's work
// must never appear as the program's. Nests; any thread; not across threads.
class OwnWorkScope {
public:
    MARTINI_TLS_ACCESS OwnWorkScope() noexcept { ++tThreadState.handlerDepth; }
    MARTINI_TLS_ACCESS ~OwnWorkScope() { --tThreadState.handlerDepth; }
    OwnWorkScope(const OwnWorkScope &) = delete;
    OwnWorkScope &operator=(const OwnWorkScope &) = delete;
};

namespace detail {

// One client's observer for one event, resolved at registration.
struct ObserverSlot {
    void *observer = nullptr;  // already cast to I<Name>EventObserver*
    ClientMask clientBit = 0;
    BitSet wanted = 0;         // EventDataTypes() of this observer
    std::uint32_t clientIndex = 0;
};

// The frozen dispatch table of one event. Written only before FinishInit(), except
// `enabled`, which Enable/DisableEventGroup change at any time.
struct alignas(64) EventTable {
    // Clients with an observer for this event whose group is enabled. Relaxed loads:
    // slots/count are frozen before any Raise (see FinishInit), and a toggle needs no
    // ordering with event data; a handler may see the old value for one event.
    std::atomic<ClientMask> enabled{0};
    std::uint32_t count = 0;
    BitSet requested = 0;          // union of the slots' `wanted`
    BitSet wantedByAll = ~BitSet{0};  // intersection of the slots' `wanted`
    ClientMask registered = 0;     // union of the slots' client bits
    // The observers alone, dense and in delivery order: the fast path reads only this.
    void *observers[kMaxClients] = {};
    ObserverSlot slots[kMaxClients];
};

}  // namespace detail

struct Diagnostics {
    std::uint64_t reentrantEventsSuppressed = 0;  // raised inside a handler, not delivered
    std::uint64_t handlerFailures = 0;            // handlers that threw (all clients)
    std::uint64_t filterFailures = 0;             // filters that threw (treated as "no")
    std::uint64_t filterCalls = 0;                // ShouldNotify calls made
};

class Registry;  // the IMpi implementation, private to the core

class Core {
public:
    explicit Core(Provider &provider);
    ~Core();
    Core(const Core &) = delete;
    Core &operator=(const Core &) = delete;

    // ---- Phase INIT (one thread) ----------------------------------------------

    // Loads a client library (dlopen), checks its MPI version and calls its
    // MPICL_Instantiate. On failure (missing file, missing entry point, version
    // mismatch, Instantiate returning an error or throwing, too many clients) logs one
    // line naming the client and the cause and returns the message; the client's
    // registrations are dropped and its id is not valid (it still uses one of the
    // kMaxClients slots). The other clients are unaffected.
    struct LoadResult {
        TId clientId = 0;   // 0 on failure
        std::string error;  // empty on success
        bool ok() const { return clientId != 0; }
    };
    LoadResult LoadClient(const ClientSpec &spec);
    // A client linked into the process (tests, built-in clients).
    LoadResult AddClient(std::string name, MPICL_Instantiate_t instantiate, std::string options);

    // Ends phase INIT: freezes the dispatch tables and computes the enabled masks.
    void FinishInit();

    // VmInit (true) / end of VmShutdown (false): data requests are answered only live.
    void SetLive(bool live);

    // The runtime is ending (any one thread, once; later calls do nothing). At one
    // instant every event stops being delivered to every client, so that all clients
    // see the same run however long the others' shutdown handlers take while the
    // runtime's other threads go on (an event whose delivery had already begun on
    // another thread reaches every client it was meant for). Then VmShutdown is
    // delivered to each client that observes it, in load order, data requests still
    // answered, and the core goes DEAD (SetLive(false)). Groups cannot be re-enabled.
    void Shutdown() noexcept;

    // ---- Instrumentation decisions (any thread, after FinishInit) ---------------
    //
    // Which clients want the group's events for this element. Each client's filter is
    // asked once per element id; the answer is cached for the life of the Core. Clients
    // without a filter for the group want every element; clients with no observer in
    // the group want none. 0 means: do not instrument the element at all.
    ClientMask CallGraphInterest(TId methodId, Martini::MPI::SCallGraphFilterData &data);
    ClientMask HeapInterest(TId classId, Martini::MPI::SHeapFilterData &data);
    ClientMask MonitorInterest(TId classId, Martini::MPI::SMonitorFilterData &data);
    ClientMask ThreadInteractionInterest(TId methodId,
                                         Martini::MPI::SThreadInteractionFilterData &data);
    // Which clients want the method's blocks counted (IMpi::RequestCoverage and their
    // EG_COVERAGE filters). A provider counts the method's blocks when it is not 0, and
    // answers Provider::DescribeCoverage for it from then on.
    ClientMask CoverageInterest(TId methodId, Martini::MPI::SCoverageFilterData &data);
    // The union of the coverage items the clients asked for (0: no client wants
    // coverage). Answers from the moment a client's MPICL_Instantiate succeeded.
    BitSet CoverageRequested() const noexcept;
    // The union of the coverage items of `clients` (CoverageInterest's answer): a
    // method none of them wants blocks of (DR_COVERAGE_CALLS alone) needs only its calls.
    BitSet CoverageItemsOf(ClientMask clients) const noexcept;

    // These three answer from the moment a client's MPICL_Instantiate succeeded (a
    // provider chooses the runtime's capabilities from them before FinishInit).
    // Union of the data items the observers of `event` asked for: compute only these.
    BitSet RequestedData(TEventType event) const noexcept {
        return tables_[event].requested;
    }
    // Whether any client registered for `event` (enabled or not).
    bool HasObservers(TEventType event) const noexcept { return tables_[event].count != 0; }
    // Whether any client currently has `event` enabled.
    bool IsEnabled(TEventType event) const noexcept {
        return tables_[event].enabled.load(std::memory_order_relaxed) != 0;
    }

    // ---- Raising events (any thread, after FinishInit) ---------------------------
    //
    // Delivers `data` to every client in `interested` that observes the event and has
    // its group enabled, in client load order. data.validData must hold the items the
    // provider filled; each observer sees validData limited to what it asked for.
    // Not delivered (and counted) when this thread is already inside a handler.
    // The check below carries a weak "nobody listening" hint (probability 0.6), not a
    // strong one: with __builtin_expect GCC moved delivery out of line and spilled
    // registers around it (1 observer: 1.85x a plain vector loop); with no hint the
    // nobody-listening path rose to 0.79 ns. Figures: docs/performance.md.
    template <class Observer>
    void Raise(typename Observer::TEventData &data, ClientMask interested = kAllClients) noexcept {
        detail::EventTable &table = tables_[Observer::kEventType];
        const ClientMask targets = table.enabled.load(std::memory_order_relaxed) & interested;
        if (__builtin_expect_with_probability(targets == 0, 1, 0.6)) return;
        Deliver<Observer>(table, targets, data);
    }
    // Events without data (VmShutdown, EcStart, ...).
    template <class Observer>
    void Raise(ClientMask interested = kAllClients) noexcept {
        detail::EventTable &table = tables_[Observer::kEventType];
        const ClientMask targets = table.enabled.load(std::memory_order_relaxed) & interested;
        if (__builtin_expect_with_probability(targets == 0, 1, 0.6)) return;
        DeliverNoData<Observer>(table, targets);
    }

    // ---- Introspection ---------------------------------------------------------
    Martini::MPI::IMpi &Mpi() noexcept;
    // The provider this core was made with (control commands resolve threads with it).
    Provider &Runtime() noexcept;
    Diagnostics GetDiagnostics() const noexcept;
    unsigned ClientCount() const noexcept;
    std::string ClientName(TId clientId) const;
    // Handler failures of one client.
    std::uint64_t ClientHandlerFailures(TId clientId) const noexcept;

private:
    // Delivery when `targets` is not empty. Inline, and kept small: the common case
    // (every observer a target, none asking for less than the provider gave, so each
    // sees validData == provided) is the re-entrancy guard around a plain loop over
    // the dense observer array, as a hand-written dispatcher would have. Every other
    // case goes out of line to DeliverSome, so that its loop's registers and code do
    // not crowd the common case where Raise is inlined (1 observer: 1.9-2.2 ns with
    // both loops inline, 1.7 ns split; docs/performance.md, "Where the time goes in
    // delivery").
    template <class Observer>
    MARTINI_TLS_ACCESS void Deliver(detail::EventTable &table, ClientMask targets,
                 typename Observer::TEventData &data) noexcept {
        if (tThreadState.handlerDepth != 0) {
            CountReentrant();
            return;
        }
        if (targets != table.registered || (data.validData & ~table.wantedByAll) != 0) {
            DeliverSome<Observer>(table, targets, data);
            return;
        }
        tThreadState.handlerDepth = 1;
        const std::uint32_t n = table.count;
        for (std::uint32_t i = 0; i < n; ++i) {
            try {
                static_cast<Observer *>(table.observers[i])->HandleEvent(data);
            } catch (...) {
                ReportHandlerFailure(table.slots[i].clientIndex, Observer::kEventType);
            }
        }
        tThreadState.handlerDepth = 0;
    }

    // The general case: some observers are not targets (filtered out for this
    // element, or their group disabled), or some asked for fewer data items than the
    // provider gave. Each target sees validData limited to what it asked for.
    template <class Observer>
    [[gnu::noinline]] MARTINI_TLS_ACCESS void DeliverSome(detail::EventTable &table,
                                                          ClientMask targets,
                                                          typename Observer::TEventData &data) noexcept {
        tThreadState.handlerDepth = 1;
        const BitSet provided = data.validData;
        const std::uint32_t n = table.count;
        for (std::uint32_t i = 0; i < n; ++i) {
            const detail::ObserverSlot &slot = table.slots[i];
            if ((targets & slot.clientBit) == 0) continue;
            data.validData = provided & slot.wanted;
            try {
                static_cast<Observer *>(slot.observer)->HandleEvent(data);
            } catch (...) {
                ReportHandlerFailure(slot.clientIndex, Observer::kEventType);
            }
        }
        data.validData = provided;
        tThreadState.handlerDepth = 0;
    }

    template <class Observer>
    MARTINI_TLS_ACCESS void DeliverNoData(detail::EventTable &table, ClientMask targets) noexcept {
        if (tThreadState.handlerDepth != 0) {
            CountReentrant();
            return;
        }
        tThreadState.handlerDepth = 1;
        for (std::uint32_t i = 0; i < table.count; ++i) {
            const detail::ObserverSlot &slot = table.slots[i];
            if ((targets & slot.clientBit) == 0) continue;
            try {
                static_cast<Observer *>(slot.observer)->HandleEvent();
            } catch (...) {
                ReportHandlerFailure(slot.clientIndex, Observer::kEventType);
            }
        }
        tThreadState.handlerDepth = 0;
    }

    void CountReentrant() noexcept;
    void ReportHandlerFailure(std::uint32_t clientIndex, TEventType event) noexcept;

    friend class Registry;
    detail::EventTable tables_[Martini::MPI::EV_LAST];
    std::unique_ptr<Registry> registry_;
};

}  // namespace martini::core
