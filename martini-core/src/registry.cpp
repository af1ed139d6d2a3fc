#include "registry.h"

#include "martini/core/log.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

namespace martini::core {

constinit thread_local ThreadState tThreadState __attribute__((tls_model("initial-exec")));

namespace {

// Resolves an observer to the interface its event's dispatch calls. The static_cast
// is a checked downcast: Type() is final in each I<Name>EventObserver.
void *TypedObserver(IEventObserver &observer, TEventType event) {
    switch (event) {
#define MARTINI_X_CAST(Name, Const, Number, Group, Items, Shape) \
    case Const:                                          \
        return static_cast<I##Name##EventObserver *>(&observer);
        MARTINI_MPI_EVENTS(MARTINI_X_CAST)
#undef MARTINI_X_CAST
        default:
            return nullptr;
    }
}

BitSet SupportedData(TEventType event) {
    switch (event) {
#define MARTINI_X_ITEMS(Name, Const, Number, Group, Items, Shape) \
    case Const:                                           \
        return Items;
        MARTINI_MPI_EVENTS(MARTINI_X_ITEMS)
#undef MARTINI_X_ITEMS
        default:
            return DR_NONE;
    }
}

std::string CurrentExceptionText() {
    try {
        throw;
    } catch (const std::exception &e) {
        return std::string("exception: ") + e.what();
    } catch (...) {
        return "an exception that is not a std::exception";
    }
}

}  // namespace

Registry::Registry(Core &core, Provider &provider) : core_(core), provider_(provider) {}

Registry::~Registry() {
    // Client libraries stay mapped: the runtime may still hold code pointers into them
    // (threads finishing handlers) until the process exits.
}

thread_local const Registry::Client *Registry::tInstantiating = nullptr;

// A failed client's id is retired: it stays in clients_ (ids stay dense) but is not
// valid any more.
Registry::Client *Registry::Find(TId clientId) const noexcept {
    if (clientId == 0 || clientId > clientCount_.load(std::memory_order_acquire)) return nullptr;
    Client *c = clients_[clientId - 1].get();
    return c->state.load(std::memory_order_acquire) == Client::kFailed ? nullptr : c;
}

bool Registry::InInstantiateOf(const Client &client) const noexcept {
    return tInstantiating == &client;
}

unsigned Registry::ClientCount() const noexcept {
    unsigned n = 0;
    for (const auto &c : Clients()) n += c->state.load(std::memory_order_acquire) == Client::kLoaded ? 1 : 0;
    return n;
}

// ---- Registration --------------------------------------------------------------

TResult Registry::RegisterEvent(TId clientId, IEventObserver &observer) noexcept {
    Client *client = Find(clientId);
    if (client == nullptr) return MRTE_ERROR_ILLEGAL_ID;
    if (!InInstantiateOf(*client)) return MRTE_ERROR_PHASE_FAILURE;
    const TEventType event = observer.Type();
    if (event <= EV_NONE || event >= EV_LAST) return MRTE_ERROR_ILLEGAL_ARGUMENT;
    if (!provider_.CanRaise(event)) return MRTE_ERROR_NOT_SUPPORTED;
    for (const auto &r : client->Registrations()) {
        if (r.event == event) return MRTE_ERROR_ILLEGAL_ARGUMENT;  // one per event
    }
    BitSet wanted = DR_NONE;
    try {
        wanted = observer.EventDataTypes() & SupportedData(event);
    } catch (...) {
        return MRTE_ERROR_FAIL;
    }
    // Fixed storage (one registration per event at most): registering cannot allocate.
    client->registrations[client->registrationCount++] = {event, TypedObserver(observer, event), wanted};
    return MRTE_RESULT_OK;
}

TResult Registry::SetEventGroupFilter(TId clientId, TEventGroup group, IEventFilter &filter) noexcept {
    Client *client = Find(clientId);
    if (client == nullptr) return MRTE_ERROR_ILLEGAL_ID;
    if (!InInstantiateOf(*client)) return MRTE_ERROR_PHASE_FAILURE;
    if (group <= EG_NONE || group >= EG_LAST) return MRTE_ERROR_NOT_SUPPORTED;
    if (filter.Group() != group || client->filters[group] != nullptr) {
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    client->filters[group] = &filter;
    return MRTE_RESULT_OK;
}

TResult Registry::EnableEventGroup(TId clientId, TEventGroup group) noexcept {
    return SetGroupEnabled(clientId, group, true);
}

TResult Registry::DisableEventGroup(TId clientId, TEventGroup group) noexcept {
    return SetGroupEnabled(clientId, group, false);
}

TResult Registry::SetGroupEnabled(TId clientId, TEventGroup group, bool enabled) noexcept {
    Client *client = Find(clientId);
    if (client == nullptr) return MRTE_ERROR_ILLEGAL_ID;
    if (group <= EG_NONE || group >= EG_LAST) return MRTE_ERROR_ILLEGAL_ARGUMENT;
    // Inside MPICL_Instantiate, the caller already holds mutex_ (Instantiate) and the
    // tables are not live yet: record the wish, FinishInit applies it.
    if (InInstantiateOf(*client)) {
        client->groupEnabled[group] = enabled;
        return MRTE_RESULT_OK;
    }
    return Guarded([&] {  // std::mutex::lock may throw std::system_error
        std::lock_guard lock(mutex_);
        client->groupEnabled[group] = enabled;
        if (frozen_) RecomputeEnabledLocked();
        return MRTE_RESULT_OK;
    });
}

ClientMask Registry::StopDelivery() noexcept {
    try {
        std::lock_guard lock(mutex_);
        if (stopped_) return 0;
        stopped_ = true;
        // The instant delivery stops: Raise reads `enabled` first, on every thread.
        ClientMask shutdownTargets = 0;
        for (int e = EV_NONE + 1; e < EV_LAST; ++e) {
            const ClientMask was = core_.tables_[e].enabled.exchange(0, std::memory_order_relaxed);
            if (e == EV_VM_SHUTDOWN) shutdownTargets = was;
        }
        return shutdownTargets;
    } catch (...) {  // std::mutex::lock may throw std::system_error
        return 0;
    }
}

void Registry::RecomputeEnabledLocked() {
    if (stopped_) return;  // after Shutdown nothing is delivered again
    std::array<ClientMask, EV_LAST> masks{};
    for (const auto &client : Clients()) {
        for (const auto &r : client->Registrations()) {
            const EEventGroup group = EventGroupOf(r.event);
            if (group == EG_NONE || client->groupEnabled[group]) {
                masks[r.event] |= ClientMask{1} << client->index;
            }
        }
    }
    for (int e = EV_NONE + 1; e < EV_LAST; ++e) {
        auto &table = core_.tables_[e];
        const ClientMask old = table.enabled.exchange(masks[e], std::memory_order_relaxed);
        if ((old == 0) != (masks[e] == 0)) {
            provider_.OnEventDemandChanged(static_cast<TEventType>(e), masks[e] != 0);
        }
    }
}

void Registry::FinishInit() {
    std::lock_guard lock(mutex_);
    if (frozen_) return;
    frozen_ = true;
    RecomputeEnabledLocked();  // delivery starts: the enabled masks were all 0 so far
}

// A client's registrations enter the dispatch tables as soon as its instantiate
// succeeds, so that HasObservers/RequestedData already answer during INIT (a provider
// chooses the runtime's capabilities from them before FinishInit). Nothing is
// delivered until FinishInit sets the enabled masks. Caller holds mutex_.
void Registry::CommitLocked(const Client &client) {
    for (const auto &r : client.Registrations()) {
        auto &table = core_.tables_[r.event];
        table.observers[table.count] = r.observer;
        auto &slot = table.slots[table.count++];
        slot.observer = r.observer;
        slot.clientBit = ClientMask{1} << client.index;
        slot.wanted = r.wanted;
        slot.clientIndex = client.index;
        table.requested |= r.wanted;
        table.wantedByAll &= r.wanted;
        table.registered |= slot.clientBit;
    }
}

// ---- Loading -------------------------------------------------------------------

Core::LoadResult Registry::Load(const ClientSpec &spec) {
    const std::string who = "client '" + spec.name + "'" +
                            (spec.path != spec.name && !spec.path.empty() ? " (" + spec.path + ")" : "");
    auto fail = [&](const std::string &cause) {
        Core::LoadResult result;
        result.error = who + " not loaded: " + cause;
        LogLine(result.error + "; the other clients are unaffected");
        return result;
    };
    if (spec.path.empty()) return fail("no library path");
    // Checked before dlopen, so that a refused library never runs its constructors.
    {
        std::lock_guard lock(mutex_);
        if (frozen_) return fail("clients can only be loaded before the runtime starts (FinishInit)");
        if (clientCount_.load() >= kMaxClients) {
            return fail("too many clients (at most " + std::to_string(kMaxClients) + ")");
        }
    }
    // A library loaded already (one client given twice, with other options) is loaded
    // again from a private copy: dlopen would return the loaded one, and the two
    // instances would share its globals (one output overwriting the other's).
    std::string copyError;
    void *handle = LoadedAlready(spec.path) ? OpenPrivateCopy(spec.path, copyError)
                                            : ::dlopen(spec.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        if (!copyError.empty()) return fail("cannot load a second instance: " + copyError);
        const char *why = ::dlerror();
        return fail(std::string("cannot load the library: ") + (why ? why : "unknown dlopen error"));
    }
    auto closeAndFail = [&](const std::string &cause) {
        ::dlclose(handle);
        return fail(cause);
    };
    ::dlerror();
    auto instantiate = reinterpret_cast<MPICL_Instantiate_t>(::dlsym(handle, "MPICL_Instantiate"));
    if (instantiate == nullptr) {
        return closeAndFail(
            "the library has no MPICL_Instantiate entry point (export it as "
            "extern \"C\" API_EXPORT TResult MPICL_Instantiate(IMpi*, TId, const char*))");
    }
    const auto *version = static_cast<const unsigned *>(::dlsym(handle, "MPICL_MpiVersion"));
    if (version == nullptr) {
        return closeAndFail(
            "the library does not say which MPI version it was built against "
            "(MPICL_MpiVersion is missing; build it with #include <MpiAPI.h>)");
    }
    const unsigned major = *version >> 16, minor = *version & 0xffff;
    // Another major version changed the ABI; a newer minor version may call IMpi
    // methods this Martini's vtable does not have.
    if (major != MARTINI_MPI_VERSION_MAJOR || minor > MARTINI_MPI_VERSION_MINOR) {
        return closeAndFail("it was built against MPI " + std::to_string(major) + "." +
                            std::to_string(minor) + " but this Martini implements MPI " +
                            std::to_string(MARTINI_MPI_VERSION_MAJOR) + "." +
                            std::to_string(MARTINI_MPI_VERSION_MINOR) +
                            "; rebuild it against this Martini's MpiAPI.h");
    }
    Core::LoadResult result = Instantiate(spec.name, handle, instantiate, spec.options);
    if (!result.ok()) {
        ::dlclose(handle);
    } else if (struct stat st; ::stat(spec.path.c_str(), &st) == 0) {
        std::lock_guard lock(mutex_);
        loadedFiles_.emplace_back(st.st_dev, st.st_ino);
    }
    return result;
}

bool Registry::LoadedAlready(const std::string &path) const {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return false;
    std::lock_guard lock(mutex_);
    return std::find(loadedFiles_.begin(), loadedFiles_.end(), std::pair{st.st_dev, st.st_ino}) != loadedFiles_.end();
}

void *Registry::OpenPrivateCopy(const std::string &path, std::string &error) {
    // An anonymous file (memfd) with the library's bytes: a file of its own to the
    // dynamic loader, so it maps a second copy with its own globals. Nothing is
    // written to disk, and the copy goes when the process does.
    const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        error = path + ": " + std::strerror(errno);
        return nullptr;
    }
    const int copy = ::memfd_create("martini-client", MFD_CLOEXEC);
    if (copy < 0) {
        error = std::string("memfd_create: ") + std::strerror(errno);
        ::close(in);
        return nullptr;
    }
    char buf[1 << 16];
    ssize_t n;
    while ((n = ::read(in, buf, sizeof buf)) > 0) {
        if (::write(copy, buf, static_cast<std::size_t>(n)) != n) {
            n = -1;
            break;
        }
    }
    const int savedErrno = errno;
    ::close(in);
    if (n < 0) {
        error = std::string("copying ") + path + ": " + std::strerror(savedErrno);
        ::close(copy);
        return nullptr;
    }
    const std::string fdPath = "/proc/self/fd/" + std::to_string(copy);
    void *handle = ::dlopen(fdPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    ::close(copy);  // the mapping stays
    return handle;
}

Core::LoadResult Registry::Instantiate(std::string name, void *dlHandle,
                                       MPICL_Instantiate_t fn, const std::string &options) {
    Core::LoadResult result;
    auto fail = [&](const std::string &cause) {
        result.clientId = 0;
        result.error = "client '" + name + "' not loaded: " + cause;
        LogLine(result.error + "; the other clients are unaffected");
        return result;
    };
    std::lock_guard lock(mutex_);
    if (frozen_) return fail("clients can only be loaded before the runtime starts (FinishInit)");
    const std::size_t slot = clientCount_.load();
    if (slot >= kMaxClients) {
        return fail("too many clients (at most " + std::to_string(kMaxClients) + ")");
    }
    auto client = std::make_unique<Client>();
    client->id = slot + 1;
    client->index = static_cast<std::uint32_t>(slot);
    client->name = name;
    client->dlHandle = dlHandle;
    client->groupEnabled.fill(true);
    Client *raw = client.get();
    clients_[slot] = std::move(client);
    clientCount_.store(slot + 1, std::memory_order_release);

    tInstantiating = raw;
    TResult rc = MRTE_ERROR_FAIL;
    std::string thrown;
    try {
        rc = fn(this, raw->id, options.c_str());
    } catch (...) {
        thrown = CurrentExceptionText();
    }
    tInstantiating = nullptr;

    if (!thrown.empty() || rc != MRTE_RESULT_OK) {
        // Leave no trace: the client's registrations never reach the tables, and its
        // id is retired (kept as a tombstone so later ids stay dense and stable).
        raw->registrationCount = 0;
        raw->filters.fill(nullptr);
        raw->state.store(Client::kFailed, std::memory_order_release);
        return fail(thrown.empty() ? std::string("MPICL_Instantiate returned ") + ResultName(rc)
                                   : "MPICL_Instantiate threw " + thrown);
    }
    CommitLocked(*raw);
    raw->state.store(Client::kLoaded, std::memory_order_release);
    result.clientId = raw->id;
    return result;
}

// ---- Filters -------------------------------------------------------------------

ClientMask Registry::Interest(EEventGroup group, TId elementId, void *filterData) {
    InterestCache &cache = interest_[group];
    {
        InterestCache::const_accessor hit;
        if (cache.find(hit, elementId)) return hit->second;
    }
    // The write accessor holds the element's lock while the filters run, so each
    // filter is asked once per element even when two threads instrument it at once.
    InterestCache::accessor entry;
    if (!cache.insert(entry, elementId)) return entry->second;
    ClientMask mask = 0;
    for (const auto &client : Clients()) {
        bool observes = group == EG_COVERAGE && client->coverageItems != 0;
        for (const auto &r : client->Registrations()) observes |= EventGroupOf(r.event) == group;
        if (!observes) continue;
        IEventFilter *filter = client->filters[group];
        bool wants = true;
        if (filter != nullptr) {
            filterCalls_.fetch_add(1, std::memory_order_relaxed);
            try {
                switch (group) {
                    case EG_CALL_GRAPH:
                        wants = static_cast<ICallGraphFilter *>(filter)->ShouldNotify(
                            *static_cast<SCallGraphFilterData *>(filterData));
                        break;
                    case EG_HEAP:
                        wants = static_cast<IHeapFilter *>(filter)->ShouldNotify(
                            *static_cast<SHeapFilterData *>(filterData));
                        break;
                    case EG_MONITOR:
                        wants = static_cast<IMonitorFilter *>(filter)->ShouldNotify(
                            *static_cast<SMonitorFilterData *>(filterData));
                        break;
                    case EG_THREAD_INTERACTION:
                        wants = static_cast<IThreadInteractionFilter *>(filter)->ShouldNotify(
                            *static_cast<SThreadInteractionFilterData *>(filterData));
                        break;
                    case EG_COVERAGE:
                        wants = static_cast<ICoverageFilter *>(filter)->ShouldNotify(
                            *static_cast<SCoverageFilterData *>(filterData));
                        break;
                    default:
                        break;
                }
            } catch (...) {
                wants = false;
                filterFailures_.fetch_add(1, std::memory_order_relaxed);
                if (!client->filterFailureLogged.exchange(true)) {
                    LogLine("client '" + client->name + "': its filter threw " +
                            CurrentExceptionText() +
                            "; the element is treated as not wanted (further failures are "
                            "counted, not logged)");
                }
            }
        }
        if (wants) mask |= ClientMask{1} << client->index;
    }
    entry->second = mask;
    if (group == EG_COVERAGE && mask != 0) {
        std::lock_guard lock(coverageMutex_);
        covered_.emplace_back(elementId, mask);
    }
    return mask;
}

// ---- Contained failures ------------------------------------------------------------

void Registry::ReportHandlerFailure(std::uint32_t clientIndex, TEventType event) noexcept {
    handlerFailures_.fetch_add(1, std::memory_order_relaxed);
    Client &client = *clients_[clientIndex];
    client.handlerFailures.fetch_add(1, std::memory_order_relaxed);
    if (client.failureLogged.exchange(true)) return;
    try {
        LogLine("client '" + client.name + "': its " + EventName(event) + " handler threw " +
                CurrentExceptionText() +
                "; the event went on to the other clients (further failures are counted, "
                "not logged)");
    } catch (...) {
        // Out of memory while logging: the count above still records the failure.
    }
}

Diagnostics Registry::GetDiagnostics() const noexcept {
    Diagnostics d;
    d.reentrantEventsSuppressed = reentrant_.load(std::memory_order_relaxed);
    d.handlerFailures = handlerFailures_.load(std::memory_order_relaxed);
    d.filterFailures = filterFailures_.load(std::memory_order_relaxed);
    d.filterCalls = filterCalls_.load(std::memory_order_relaxed);
    return d;
}

std::string Registry::ClientName(TId clientId) const {
    const Client *c = Find(clientId);
    return c ? c->name : std::string();
}

std::uint64_t Registry::ClientHandlerFailures(TId clientId) const noexcept {
    const Client *c = Find(clientId);
    return c ? c->handlerFailures.load(std::memory_order_relaxed) : 0;
}

// ---- Core (thin forwarding) ------------------------------------------------------

Core::Core(Provider &provider) : registry_(std::make_unique<Registry>(*this, provider)) {}
Core::~Core() = default;

Core::LoadResult Core::LoadClient(const ClientSpec &spec) { return registry_->Load(spec); }

Core::LoadResult Core::AddClient(std::string name, MPICL_Instantiate_t instantiate,
                                 std::string options) {
    return registry_->Instantiate(std::move(name), nullptr, instantiate, options);
}

void Core::FinishInit() { registry_->FinishInit(); }
void Core::SetLive(bool live) { registry_->SetLive(live); }

void Core::Shutdown() noexcept {
    const ClientMask targets = registry_->StopDelivery();  // 0 the second time
    if (targets != 0) DeliverNoData<IVmShutdownEventObserver>(tables_[EV_VM_SHUTDOWN], targets);
    registry_->SetLive(false);
}

ClientMask Core::CallGraphInterest(TId methodId, SCallGraphFilterData &data) {
    return registry_->Interest(EG_CALL_GRAPH, methodId, &data);
}
ClientMask Core::HeapInterest(TId classId, SHeapFilterData &data) {
    return registry_->Interest(EG_HEAP, classId, &data);
}
ClientMask Core::MonitorInterest(TId classId, SMonitorFilterData &data) {
    return registry_->Interest(EG_MONITOR, classId, &data);
}
ClientMask Core::CoverageInterest(TId methodId, SCoverageFilterData &data) {
    return registry_->Interest(EG_COVERAGE, methodId, &data);
}
BitSet Core::CoverageRequested() const noexcept { return registry_->CoverageRequested(); }
BitSet Core::CoverageItemsOf(ClientMask clients) const noexcept { return registry_->CoverageItemsOf(clients); }
ClientMask Core::ThreadInteractionInterest(TId methodId, SThreadInteractionFilterData &data) {
    return registry_->Interest(EG_THREAD_INTERACTION, methodId, &data);
}

IMpi &Core::Mpi() noexcept { return *registry_; }
Provider &Core::Runtime() noexcept { return registry_->provider(); }
Diagnostics Core::GetDiagnostics() const noexcept { return registry_->GetDiagnostics(); }
unsigned Core::ClientCount() const noexcept { return registry_->ClientCount(); }
std::string Core::ClientName(TId clientId) const { return registry_->ClientName(clientId); }
std::uint64_t Core::ClientHandlerFailures(TId clientId) const noexcept {
    return registry_->ClientHandlerFailures(clientId);
}
void Core::CountReentrant() noexcept { registry_->CountReentrant(); }
void Core::ReportHandlerFailure(std::uint32_t clientIndex, TEventType event) noexcept {
    registry_->ReportHandlerFailure(clientIndex, event);
}

}  // namespace martini::core
