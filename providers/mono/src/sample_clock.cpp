#include "sample_clock.h"

#include "mono_support.h"
#include "martini/core/task_clock.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace martini::mono {

namespace {

std::atomic<int> gPerfRefused{0};  // errno of the first refusal: no further attempts

using core::OpenTaskClock;
using core::ThreadCpuClock;

using core::TasksOfThisProcess;

pid_t Gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

}  // namespace

std::string SampleClock::Find() {
    if (signal_ != 0) return "";
    Dl_info mono{};
    if (dladdr(reinterpret_cast<void *>(&mono_profiler_set_sample_mode), &mono) == 0 || mono.dli_fbase == nullptr) {
        return "Mono's code was not found (dladdr)";
    }
    int found = 0, count = 0;
    for (int sig = SIGRTMIN + 1; sig < SIGRTMAX; ++sig) {
        struct sigaction sa {};
        if (sigaction(sig, nullptr, &sa) != 0 || (sa.sa_flags & SA_SIGINFO) == 0) continue;
        Dl_info where{};
        if (dladdr(reinterpret_cast<void *>(sa.sa_sigaction), &where) == 0 || where.dli_fbase != mono.dli_fbase) continue;
        if ((sa.sa_flags & SA_RESTART) == 0 || !sigisemptyset(&sa.sa_mask)) continue;  // abort, suspend: not ours
        found = sig;
        ++count;
    }
    if (count != 1) {
        return count == 0 ? "Mono's profiler signal was not found"
                          : "Mono's profiler signal could not be told from " + std::to_string(count - 1) +
                                " other signals of Mono's";
    }
    signal_ = found;
    return "";
}

void SampleClock::Start(unsigned hz) {
    std::lock_guard lock(mutex_);
    periodNs_.store(1'000'000'000L / static_cast<long>(hz), std::memory_order_relaxed);
    if (running_.load(std::memory_order_acquire) || signal_ == 0) return;
    // Under mutex_: a thread starting now is armed here or at its ThreadStarted.
    running_.store(true, std::memory_order_release);
    for (pid_t tid : TasksOfThisProcess()) ArmLocked(threads_[tid], tid);
}

void SampleClock::SetRate(unsigned hz) {
    std::lock_guard lock(mutex_);
    periodNs_.store(1'000'000'000L / static_cast<long>(hz), std::memory_order_relaxed);
    if (!running_.load(std::memory_order_acquire)) return;
    for (auto &[tid, a] : threads_) ArmLocked(a, tid);
}

void SampleClock::Stop() {
    running_.store(false, std::memory_order_release);
    std::unique_lock lock(mutex_, std::chrono::seconds(1));
    if (!lock.owns_lock()) return;
    for (auto &[tid, a] : threads_) DisarmLocked(a);
    threads_.clear();
}

void SampleClock::ArmLocked(Armed &a, pid_t tid) {
    const long periodNs = static_cast<long>(periodNs_.load(std::memory_order_relaxed));
    if (a.perfFd >= 0) {  // a new rate
        auto period = static_cast<std::uint64_t>(periodNs);
        ioctl(a.perfFd, PERF_EVENT_IOC_PERIOD, &period);
        return;
    }
    if (!a.hasTimer && (a.perfFd = OpenTaskClock(tid, periodNs, signal_, gPerfRefused)) >= 0) return;
    if (!a.hasTimer) {
        sigevent event{};
        event.sigev_notify = SIGEV_THREAD_ID;
        event.sigev_signo = signal_;
        event._sigev_un._tid = tid;
        if (timer_create(ThreadCpuClock(tid), &event, &a.timer) != 0) return;  // the thread is gone
        a.hasTimer = true;
    }
    itimerspec spec{};
    spec.it_interval.tv_sec = periodNs / 1'000'000'000L;
    spec.it_interval.tv_nsec = periodNs % 1'000'000'000L;
    spec.it_value = spec.it_interval;
    timer_settime(a.timer, 0, &spec, nullptr);
}

void SampleClock::DisarmLocked(Armed &a) {
    if (a.perfFd >= 0) close(a.perfFd);
    a.perfFd = -1;
    if (a.hasTimer) timer_delete(a.timer);
    a.hasTimer = false;
}

void SampleClock::ThreadStarted() {
    if (!running_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(mutex_);
    if (!running_.load(std::memory_order_relaxed)) return;
    const pid_t tid = Gettid();
    Armed &a = threads_[tid];
    DisarmLocked(a);  // a thread that ended unseen had this id
    ArmLocked(a, tid);
}

void SampleClock::ThreadEnded() {
    if (!running_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(mutex_);
    auto it = threads_.find(Gettid());
    if (it == threads_.end()) return;
    DisarmLocked(it->second);
    threads_.erase(it);
}

bool SampleClock::UsesTimers() { return !core::PerfClockChosen() || gPerfRefused.load() != 0; }

std::string SampleClock::WhyTimers() {
    if (!core::PerfClockChosen()) return "MARTINI_SAMPLING_CLOCK=timer";
    if (const int refused = gPerfRefused.load(); refused != 0) {
        return std::string("perf_event_open refused, ") + std::strerror(refused);
    }
    return "";
}

std::string SampleClock::Describe() { return UsesTimers() ? "POSIX CPU timers, " + WhyTimers() : "perf task-clock"; }

}  // namespace martini::mono
