#include "vm.h"

namespace martini::mono {

void Vm::RaiseOrQueue(std::function<void()> raise) {
    const Phase phase = CurrentPhase();
    if (phase == Phase::kLive) {
        raise();
        return;
    }
    if (phase == Phase::kDead) return;
    {
        std::lock_guard lock(queueMutex_);
        // Checked again under the lock: GoLive flips the phase while holding it.
        if (CurrentPhase() == Phase::kStarting) {
            queue_.push_back(std::move(raise));
            return;
        }
    }
    if (Live()) raise();
}

void Vm::GoLive() {
    std::vector<std::function<void()>> queued;
    {
        std::lock_guard lock(queueMutex_);
        queued.swap(queue_);
        // Events queued by other threads while these are replayed would overtake them;
        // the replay happens under the lock for that reason (it raises only events).
        for (auto &raise : queued) raise();
        phase_.store(Phase::kLive, std::memory_order_release);
    }
}

}  // namespace martini::mono
