// The run lifecycle, the same for every provider:
//
//   Run run(core);
//   run.Load(config, anchorDir, usage)   // clients loaded (INIT); the three refusals; the
//                                        // TSC calibrated when a client asks for it
//   ... the provider decides its components from the registrations, core.FinishInit() ...
//   run.GoLive(threadId, attached)       // SetLive, EcSetOutputDirectory, EcAttach when
//                                        // attached, VmInit with the thread that runs it
//   ... events ...
//   run.End(stopFirst)                   // what the provider stops first (its sampler),
//                                        // then Core::Shutdown: VmShutdown, the outputs
//   (or run.Detach(stopFirst): the same with EcDetach first, `martini control PID detach`)
//
// What a provider writes around it is runtime glue: where its configuration comes from,
// how the thread that goes live is named, what must stop before the core shuts down.
// Load and GoLive are called once each, on one thread at a time (the provider's own
// lifecycle lock or its runtime's initialization order sees to that); End and Detach
// may race (a control thread's detach, the runtime's exit): the first one ends the run.
#pragma once

#include "martini/core/core.h"

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

namespace martini::core {

class Run {
public:
    explicit Run(Core &core) noexcept : core_(core) {}

    enum class Refusal {
        kNone,        // at least one client loaded
        kBadConfig,   // the configuration could not be read: nothing loaded
        kNoClient,    // the configuration names no client
        kNoneLoaded,  // it names some, and none could be loaded (each said why on stderr)
    };
    struct Loaded {
        Refusal refusal = Refusal::kNone;
        std::string message;  // why, when refused: the configuration's error, or what was missing
        unsigned requested = 0;
        unsigned loaded = 0;
    };

    // Loads the clients `config` names (core::LoadClients: text or "@file.json"), from
    // `anchorDir` or `searchPath`. When refused, `message` says why; for kNoClient it
    // ends with "(" + usage + ")" when `usage` is not empty (how this runtime is given
    // its clients). When not refused: the configuration's output directory is kept and
    // the TSC is calibrated (~10 ms) if some client asks for DR_CPU_TIMESTAMP.
    Loaded Load(std::string_view config, const std::string &anchorDir, std::string_view usage = {},
                const char *searchPath = nullptr) noexcept;

    // The directory the clients write to: the configuration's, unless set here (a
    // launcher's --output). Raised as EcSetOutputDirectory by GoLive or Announce.
    const std::string &OutputDirectory() const noexcept { return outputDirectory_; }
    void SetOutputDirectory(std::string dir) { outputDirectory_ = std::move(dir); }
    // EcSetOutputDirectory, when a directory is known and a client observes it.
    void AnnounceOutputDirectory() noexcept;

    // The runtime is live (after Core::FinishInit): data requests are answered, the
    // output directory is announced, EcAttach is raised when `attached`, then VmInit
    // with `threadId` (0: the thread is not known; no DR_THREAD_ID then).
    void GoLive(TId threadId, bool attached = false) noexcept;

    // The run ends: `stopFirst` (what must stop before the clients write: a sampler
    // raising its last samples, a control channel), then Core::Shutdown (delivery
    // stops for every client at once, then VmShutdown). Returns false, doing nothing,
    // when the run ended already.
    bool End(const std::function<void()> &stopFirst = {}) noexcept;
    // `martini control PID detach|terminate`: as End, with EcDetach raised between
    // `stopFirst` and the shutdown.
    bool Detach(const std::function<void()> &stopFirst = {}) noexcept;
    bool Ended() const noexcept { return ended_.load(std::memory_order_acquire); }

private:
    bool Stop(const std::function<void()> &stopFirst, bool detach) noexcept;

    Core &core_;
    std::string outputDirectory_;
    std::atomic<bool> ended_{false};  // End or Detach, once, from whichever thread comes first
};

// True when some client asks for `item` with some event.
bool AnyEventRequests(const Core &core, BitSet item) noexcept;

}  // namespace martini::core
