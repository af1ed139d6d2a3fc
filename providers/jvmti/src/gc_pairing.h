// Outermost-pair filtering for GC events. JVMTI may nest collections (G1 under
// -Xverify:all starts a second collection inside the first: two starts, then two
// finishes); MPI promises properly paired GcStart/GcEnd, so only the outermost pair is
// raised. A finish without a start (events switched on during a collection) is
// dropped. Lock-free: the JVM calls these at safepoints, on its GC threads.
#pragma once

#include <atomic>

namespace martini::jvm {

class GcPairing {
public:
    // A collection started; true when it is the outermost (raise GcStart).
    bool Start() noexcept { return depth_.fetch_add(1, std::memory_order_acq_rel) == 0; }
    // A collection finished; true when it closes the outermost (raise GcEnd).
    bool Finish() noexcept {
        int depth = depth_.load(std::memory_order_acquire);
        while (depth > 0) {
            if (depth_.compare_exchange_weak(depth, depth - 1, std::memory_order_acq_rel)) return depth == 1;
        }
        return false;
    }

private:
    std::atomic<int> depth_{0};
};

}  // namespace martini::jvm
