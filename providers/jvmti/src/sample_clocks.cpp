#include "sample_clocks.h"

#include "martini/core/kernel_stacks.h"
#include "martini/core/task_clock.h"

#include "native_unwind.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace martini::jvm {

using core::TasksOfThisProcess;
using core::ThreadCpuClock;

bool SampleClocks::PerfChosen() { return core::PerfClockChosen(); }

void SampleClocks::SetRate(unsigned hz, bool wall) {
    // Under mutex_, the rate is either stored before Start arms the threads or seen
    // armed and applied here.
    std::lock_guard lock(mutex_);
    hz_.store(hz, std::memory_order_relaxed);
    const bool modeChanged = wall_.exchange(wall) != wall;
    if (!armed_) return;
    for (auto &[tid, t] : threads_) {
        if (modeChanged) DisarmLocked(t, tid);
        if (!t.notJava) ArmLocked(t, tid);
    }
}

void SampleClocks::Start() {
    // The threads running now (later ones at their ThreadStart, or at a rescan). The
    // JVM's own threads are sampled through their native frames; any thread whose
    // samples have neither Java nor native frames is left alone (LeaveAlone).
    std::lock_guard lock(mutex_);
    UnmapRetiredLocked();
    armed_ = true;
    for (pid_t tid : TasksOfThisProcess()) AddLocked(tid);
}

void SampleClocks::Stop() {
    std::lock_guard lock(mutex_);
    for (auto &[tid, t] : threads_) DisarmLocked(t, tid);
    threads_.clear();
    armed_ = false;
}

void SampleClocks::Add(pid_t tid) {
    std::lock_guard lock(mutex_);
    AddLocked(tid);
}

void SampleClocks::Drop(pid_t tid) {
    std::lock_guard lock(mutex_);
    DropLocked(tid);
}

void SampleClocks::Exclude(pid_t sampler) {
    std::lock_guard lock(mutex_);
    sampler_ = sampler;
    DropLocked(sampler);
}

std::size_t SampleClocks::Count() {
    std::lock_guard lock(mutex_);
    return threads_.size();
}

void SampleClocks::LeaveAlone(const std::vector<pid_t> &tids) {
    std::lock_guard lock(mutex_);
    for (pid_t tid : tids) {
        auto it = threads_.find(tid);
        if (it == threads_.end() || it->second.notJava) continue;
        it->second.notJava = true;
        DisarmLocked(it->second, tid);
    }
}

void SampleClocks::Rescan() {
    const std::vector<pid_t> tasks = TasksOfThisProcess();
    std::lock_guard lock(mutex_);
    if (!armed_ || tasks.empty()) return;
    for (pid_t tid : tasks) {
        if (tid != sampler_) AddLocked(tid);
    }
    std::vector<pid_t> gone;
    for (const auto &[tid, t] : threads_) {
        if (std::find(tasks.begin(), tasks.end(), tid) == tasks.end()) gone.push_back(tid);
    }
    for (pid_t tid : gone) {
        DropLocked(tid);
        NativeUnwind::ForgetStackTop(tid);
    }
    UnmapRetiredLocked();
}

void SampleClocks::UnmapRetiredLocked() {
    // A second is ages for a handler that read a ring's address just before its thread
    // was disarmed.
    const auto before = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    std::erase_if(retired_, [&](const Retired &r) {
        if (r.when > before) return false;
        core::UnmapKernelRing(r.ring);
        return true;
    });
}

void SampleClocks::AddLocked(pid_t tid) {
    auto [it, added] = threads_.try_emplace(tid);
    if (added) ArmLocked(it->second, tid);
}

void SampleClocks::ArmLocked(Thread &t, pid_t tid) {
    if (wall_.load(std::memory_order_relaxed)) return;  // the sampler thread signals it
    const long periodNs = 1'000'000'000L / static_cast<long>(hz_.load(std::memory_order_relaxed));
    if (t.perfFd >= 0) {  // a new rate
        auto period = static_cast<std::uint64_t>(periodNs);
        ioctl(t.perfFd, PERF_EVENT_IOC_PERIOD, &period);
        return;
    }
    bool kernelStacks = false;
    if (!t.hasTimer && (t.perfFd = core::OpenTaskClock(tid, periodNs, SIGPROF, perfRefused_,
                                                       core::KernelStacksChosen() ? &kernelStacks : nullptr)) >= 0) {
        if (kernelStacks && (t.ring = core::MapKernelRing(t.perfFd)) != nullptr) {
            core::KernelRings::Register(tid, t.ring);
        }
        return;
    }
    if (!t.hasTimer) {
        sigevent event{};
        event.sigev_notify = SIGEV_THREAD_ID;
        event.sigev_signo = SIGPROF;
        event._sigev_un._tid = tid;
        if (timer_create(ThreadCpuClock(tid), &event, &t.timer) != 0) return;  // the thread is gone
        t.hasTimer = true;
    }
    itimerspec spec{};
    spec.it_interval.tv_sec = periodNs / 1'000'000'000L;
    spec.it_interval.tv_nsec = periodNs % 1'000'000'000L;
    spec.it_value = spec.it_interval;
    timer_settime(t.timer, 0, &spec, nullptr);
}

void SampleClocks::DisarmLocked(Thread &t, pid_t tid) {
    if (t.perfFd >= 0) {
        // A mapped ring keeps the event alive past close: stopped first.
        ioctl(t.perfFd, PERF_EVENT_IOC_DISABLE, 0);
        close(t.perfFd);
    }
    t.perfFd = -1;
    if (t.ring != nullptr) {
        core::KernelRings::Unregister(tid, t.ring);
        retired_.push_back({t.ring, std::chrono::steady_clock::now()});
        t.ring = nullptr;
    }
    if (t.hasTimer) timer_delete(t.timer);
    t.hasTimer = false;
}

void SampleClocks::DropLocked(pid_t tid) {
    auto it = threads_.find(tid);
    if (it == threads_.end()) return;
    DisarmLocked(it->second, tid);
    threads_.erase(it);
}

void SampleClocks::SignalAll() {
    const pid_t pid = getpid();
    std::lock_guard lock(mutex_);
    for (auto it = threads_.begin(); it != threads_.end();) {
        if (!it->second.notJava && syscall(SYS_tgkill, pid, it->first, SIGPROF) != 0 && errno == ESRCH) {
            it = threads_.erase(it);  // ended without a ThreadEnd (not a Java thread)
        } else {
            ++it;
        }
    }
}

}  // namespace martini::jvm
