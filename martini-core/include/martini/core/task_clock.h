// The CPU clocks the samplers arm per thread (the JVM's SampleClocks, Mono's
// SampleClock), header only: a perf task-clock event that signals its thread at each
// period of the thread's CPU time, which Martini prefers, and the clock id a POSIX
// timer on another thread's CPU time needs, the fallback; and the threads to arm.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace martini::core {

// Perf events unless MARTINI_SAMPLING_CLOCK=timer (or timers) asks for the POSIX CPU
// timers. Read once; call it outside signal handlers first.
inline bool PerfClockChosen() {
    static const bool chosen = [] {
        const char *clock = std::getenv("MARTINI_SAMPLING_CLOCK");
        return clock == nullptr || (std::strcmp(clock, "timer") != 0 && std::strcmp(clock, "timers") != 0);
    }();
    return chosen;
}

// A perf task-clock event on thread `tid` that sends it `signal` every `periodNs` of
// its CPU time; -1 when perf events are not chosen, were refused before (`refused`
// holds the errno of the first refusal: no further attempts) or are refused now
// (perf_event_paranoid, a seccomp filter). Kernel time is counted where the kernel lets
// it (as the timers count it), else user time only. A thread gone (ESRCH) is no refusal.
// With `kernelStacks`, an event that counts kernel time also records the kernel's call
// chain at each period (kernel_stacks.h), and *kernelStacks says whether it does.
inline int OpenTaskClock(pid_t tid, long periodNs, int signal, std::atomic<int> &refused,
                         bool *kernelStacks = nullptr) {
    if (kernelStacks != nullptr) *kernelStacks = false;
    if (!PerfClockChosen() || refused.load(std::memory_order_relaxed) != 0) return -1;
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.sample_period = static_cast<std::uint64_t>(periodNs);
    attr.disabled = 1;
    attr.wakeup_events = 1;
    if (kernelStacks != nullptr) {
        attr.sample_type = PERF_SAMPLE_CALLCHAIN;
        attr.exclude_callchain_user = 1;
    }
    int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0 && (errno == EACCES || errno == EPERM)) {
        attr.sample_type = 0;
        attr.exclude_callchain_user = 0;
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
    } else if (fd >= 0 && kernelStacks != nullptr) {
        *kernelStacks = true;
    }
    if (fd < 0) {
        if (errno != ESRCH) refused.store(errno, std::memory_order_relaxed);
        return -1;
    }
    f_owner_ex owner{F_OWNER_TID, tid};
    if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, signal) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        refused.store(errno != 0 ? errno : EINVAL, std::memory_order_relaxed);
        close(fd);
        return -1;
    }
    return fd;
}

// Linux's clock id for another thread's CPU time (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)).
inline clockid_t ThreadCpuClock(pid_t tid) { return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6); }

// The ids of this process's threads now (/proc/self/task).
inline std::vector<pid_t> TasksOfThisProcess() {
    std::vector<pid_t> tids;
    if (DIR *d = opendir("/proc/self/task")) {
        while (dirent *e = readdir(d)) {
            if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
        }
        closedir(d);
    }
    return tids;
}

}  // namespace martini::core
