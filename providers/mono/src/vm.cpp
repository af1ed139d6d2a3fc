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
    // Under the lock (recursive): another thread's event waits until the queue is
    // delivered, and an event raised while replaying (a handler's data request that
    // makes a method known) joins the end of the queue on this thread.
    std::lock_guard lock(queueMutex_);
    for (std::size_t i = 0; i < queue_.size(); ++i) {
        const std::function<void()> raise = std::move(queue_[i]);
        raise();
    }
    queue_.clear();
    queue_.shrink_to_fit();
    phase_.store(Phase::kLive, std::memory_order_release);
}

}  // namespace martini::mono
