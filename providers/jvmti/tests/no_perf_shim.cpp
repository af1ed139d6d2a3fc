// A kernel that refuses perf events, for one test: LD_PRELOAD this library and
// syscall(SYS_perf_event_open, ...) fails with EACCES, as under perf_event_paranoid 3
// or a container's seccomp filter; every other syscall() goes through.
#include <dlfcn.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstdarg>

extern "C" long syscall(long number, ...) {
    if (number == SYS_perf_event_open) {
        errno = EACCES;
        return -1;
    }
    using Syscall = long (*)(long, ...);
    static const auto next = reinterpret_cast<Syscall>(dlsym(RTLD_NEXT, "syscall"));
    va_list args;
    va_start(args, number);
    long a[6];
    for (long &x : a) x = va_arg(args, long);  // the x86-64 and AArch64 ABIs pass six in registers
    va_end(args);
    return next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
