// Monitors: ContendedMonitorEnter (monitor_contention: the thread blocks on a lock
// another thread owns) and ContendedMonitorEntered (monitor_acquired after it). Mono
// tells neither the owner (DR_MONITOR_OWNER_THREAD_ID not given) nor a wait on a
// monitor (MonitorWait/Waited: not raised). A contention that ends without the lock
// (monitor_failed: timeout, interruption) raises no Entered.
//
// Locks: none of its own.
#pragma once

#include "vm.h"

namespace martini::mono {

class Monitors {
public:
    static void SetCallbacks(MonoProfilerHandle h);

private:
    static void OnContention(MonoProfiler *, MonoObject *object);
    static void OnAcquired(MonoProfiler *, MonoObject *object);
};

}  // namespace martini::mono
