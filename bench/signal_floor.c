// The floor under any signal-based sampler on this machine: what one thread's
// CPU-bound loop pays for a SIGPROF every period of its CPU time, with an empty
// handler, by each clock the JVM and Mono samplers can use (bench/signal_floor.sh).
//
//   signal_floor MODE [HZ] [ITERATIONS]   prints "MODE seconds signals"
//
// MODE:
//   none        no clock, no signal: the baseline
//   raise       the thread sends itself the signal HZ times a CPU-second (by loop
//               count): the signal's delivery alone, no timer
//   cpu-timer   a POSIX CPU timer (CLOCK_THREAD_CPUTIME_ID), checked at the kernel's
//               tick: no interrupt of its own, but no rate above the tick's
//   wall-timer  a POSIX timer on CLOCK_MONOTONIC: a high-resolution timer interrupt
//               every period
//   task-clock  perf_event_open's task-clock, as the samplers arm it (O_ASYNC, F_SETSIG)
//   cpu-clock   perf_event_open's cpu-clock
//   task-clock-callchain  task-clock recording the kernel's call chain into a mapped
//               ring, as the JVM sampler does for kernel frames
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t signals;

static void OnSignal(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)info;
    (void)context;
    signals = signals + 1;
}

static double Now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int ArmPerf(unsigned long long config, long periodNs, int callchain) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = config;
    a.sample_period = (unsigned long long)periodNs;
    a.wakeup_events = 1;
    a.disabled = 1;
    if (callchain) {
        a.sample_type = PERF_SAMPLE_CALLCHAIN;
        a.exclude_callchain_user = 1;
    } else {
        a.exclude_kernel = 1;
        a.exclude_hv = 1;
    }
    const int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        perror("perf_event_open");
        return -1;
    }
    if (callchain && mmap(NULL, 2 * (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED) {
        perror("mmap");
        return -1;
    }
    struct f_owner_ex owner = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
    if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        perror("arming the perf event");
        return -1;
    }
    return 0;
}

static int ArmTimer(clockid_t clock, long periodNs) {
    struct sigevent e;
    memset(&e, 0, sizeof e);
    e.sigev_notify = SIGEV_THREAD_ID;
    e.sigev_signo = SIGPROF;
    e._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    timer_t timer;
    if (timer_create(clock, &e, &timer) != 0) {
        perror("timer_create");
        return -1;
    }
    const struct timespec period = {periodNs / 1000000000L, periodNs % 1000000000L};
    struct itimerspec when = {period, period};
    return timer_settime(timer, 0, &when, NULL);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: signal_floor MODE [HZ] [ITERATIONS]\n");
        return 2;
    }
    const char *mode = argv[1];
    const long hz = argc > 2 ? atol(argv[2]) : 1000;
    const long iterations = argc > 3 ? atol(argv[3]) : 600000000L;
    if (hz <= 0 || hz > 1000000000L || iterations <= 0) {
        fprintf(stderr, "signal_floor: HZ and ITERATIONS must be positive\n");
        return 2;
    }
    const long periodNs = 1000000000L / hz;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = OnSignal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    int armed = 0;
    long raiseEvery = 0;
    if (strcmp(mode, "none") == 0) {
    } else if (strcmp(mode, "raise") == 0) {
        raiseEvery = 290000000L / hz;  // the loop runs about 290 M iterations a CPU-second here
        if (raiseEvery < 1) raiseEvery = 1;
    } else if (strcmp(mode, "cpu-timer") == 0) {
        armed = ArmTimer(CLOCK_THREAD_CPUTIME_ID, periodNs);
    } else if (strcmp(mode, "wall-timer") == 0) {
        armed = ArmTimer(CLOCK_MONOTONIC, periodNs);
    } else if (strcmp(mode, "task-clock") == 0) {
        armed = ArmPerf(PERF_COUNT_SW_TASK_CLOCK, periodNs, 0);
    } else if (strcmp(mode, "cpu-clock") == 0) {
        armed = ArmPerf(PERF_COUNT_SW_CPU_CLOCK, periodNs, 0);
    } else if (strcmp(mode, "task-clock-callchain") == 0) {
        armed = ArmPerf(PERF_COUNT_SW_TASK_CLOCK, periodNs, 1);
    } else {
        fprintf(stderr, "signal_floor: unknown mode '%s'\n", mode);
        return 2;
    }
    if (armed != 0) return 1;
    const double start = Now();
    volatile double sum = 0;
    for (long i = 0; i < iterations; ++i) {
        sum = sum + (double)i * 0.5;
        if (raiseEvery != 0 && i % raiseEvery == 0) raise(SIGPROF);
    }
    const double seconds = Now() - start;
    printf("%s %.4f %ld\n", mode, seconds, (long)signals);
    return 0;
}
