#include "martini/core/run.h"

#include "martini/core/client_spec.h"
#include "martini/core/clock.h"

namespace martini::core {

using namespace Martini::MPI;

bool AnyEventRequests(const Core &core, BitSet item) noexcept {
    for (int e = EV_NONE + 1; e < EV_LAST; ++e) {
        if ((core.RequestedData(static_cast<TEventType>(e)) & item) != 0) return true;
    }
    return false;
}

Run::Loaded Run::Load(std::string_view config, const std::string &anchorDir, std::string_view usage,
                      const char *searchPath) noexcept {
    const ClientsLoaded clients = LoadClients(core_, config, anchorDir, searchPath);
    Loaded r;
    r.requested = clients.requested;
    r.loaded = clients.loaded;
    try {
        if (!clients.error.empty()) {
            r.refusal = Refusal::kBadConfig;
            r.message = clients.error;
        } else if (clients.requested == 0) {
            r.refusal = Refusal::kNoClient;
            r.message = "no client given";
            if (!usage.empty()) r.message.append(" (").append(usage).append(")");
        } else if (clients.loaded == 0) {
            r.refusal = Refusal::kNoneLoaded;
            r.message = "no client could be loaded";
        } else {
            outputDirectory_ = clients.outputDirectory;
        }
    } catch (...) {  // std::bad_alloc
        r.refusal = Refusal::kBadConfig;
    }
    if (r.refusal == Refusal::kNone && AnyEventRequests(core_, DR_CPU_TIMESTAMP)) Clock::Calibrate();
    return r;
}

void Run::AnnounceOutputDirectory() noexcept {
    if (outputDirectory_.empty() || !core_.HasObservers(EV_EC_SET_OUTPUT_DIRECTORY)) return;
    SEcSetOutputDirectoryEventData out;
    out.validData = core_.RequestedData(EV_EC_SET_OUTPUT_DIRECTORY) & DR_COMMAND;
    out.szDirectoryName = outputDirectory_.c_str();
    core_.Raise<IEcSetOutputDirectoryEventObserver>(out);
}

void Run::GoLive(TId threadId, bool attached) noexcept {
    core_.SetLive(true);
    AnnounceOutputDirectory();
    // Attached: EcAttach first, then VmInit as at start-up (the runtime is live for them now).
    if (attached) core_.Raise<IEcAttachEventObserver>();
    SVmInitEventData d;
    if (threadId != 0) Put(d, core_.RequestedData(EV_VM_INIT), DR_THREAD_ID, d.threadId, threadId);
    core_.Raise<IVmInitEventObserver>(d);
}

bool Run::End(const std::function<void()> &stopFirst) noexcept { return Stop(stopFirst, false); }

bool Run::Detach(const std::function<void()> &stopFirst) noexcept { return Stop(stopFirst, true); }

bool Run::Stop(const std::function<void()> &stopFirst, bool detach) noexcept {
    if (ended_.exchange(true, std::memory_order_acq_rel)) return false;
    if (stopFirst) {
        try {
            stopFirst();
        } catch (...) {  // the clients still write what they collected
        }
    }
    if (detach) core_.Raise<IEcDetachEventObserver>();
    core_.Shutdown();  // delivery stops for every client at once, then VmShutdown
    return true;
}

}  // namespace martini::core
