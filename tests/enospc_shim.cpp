// A full disk for one test: LD_PRELOAD this library and write(2) to files whose path
// contains $ENOSPC_SHIM_MATCH fails with ENOSPC once $ENOSPC_SHIM_BYTES bytes (over all
// such files of the process) were written; a write that crosses the limit is short, as
// on a real file system. A file opened as /proc/self/fd/N (how the clients' writers
// that take a path get their temporary) counts by the name it has. Other files, stderr
// included, are untouched. Under ASan, run
// with ASAN_OPTIONS=verify_asan_link_order=0.
// Both open and open64 are defined here: the large-file renaming would merge them.
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kMaxFd = 65536;
std::atomic<bool> gFull[kMaxFd];
std::atomic<long long> gBudget{-1};

long long Budget() {
    long long b = gBudget.load();
    if (b < 0) {
        const char *env = std::getenv("ENOSPC_SHIM_BYTES");
        b = env ? std::atoll(env) : 0;
        long long expected = -1;
        gBudget.compare_exchange_strong(expected, b);
        b = gBudget.load();
    }
    return b;
}

// Whether writes to `path` fill the disk: it contains $ENOSPC_SHIM_MATCH, or it is
// /proc/self/fd/N of a file whose name does.
bool Matches(const char *path) {
    const char *match = std::getenv("ENOSPC_SHIM_MATCH");
    if (match == nullptr || *match == '\0' || path == nullptr) return false;
    if (std::strncmp(path, "/proc/self/fd/", 14) == 0) {
        char target[4096];
        const ssize_t n = readlink(path, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            return std::strstr(target, match) != nullptr;
        }
    }
    return std::strstr(path, match) != nullptr;
}

void Track(int fd, const char *path) {
    if (fd < 0 || fd >= kMaxFd) return;
    gFull[fd] = Matches(path);
}

template <class F>
F Next(const char *name) {
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

int open(const char *path, int flags, ...) {
    static auto real = Next<int (*)(const char *, int, ...)>("open");
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    const int fd = real(path, flags, mode);
    Track(fd, path);
    return fd;
}

int open64(const char *path, int flags, ...) {
    static auto real = Next<int (*)(const char *, int, ...)>("open64");
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    const int fd = real(path, flags, mode);
    Track(fd, path);
    return fd;
}

int openat(int dirfd, const char *path, int flags, ...) {
    static auto real = Next<int (*)(int, const char *, int, ...)>("openat");
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    const int fd = real(dirfd, path, flags, mode);
    Track(fd, path);
    return fd;
}

int openat64(int dirfd, const char *path, int flags, ...) {
    static auto real = Next<int (*)(int, const char *, int, ...)>("openat64");
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    const int fd = real(dirfd, path, flags, mode);
    Track(fd, path);
    return fd;
}

// stdio writes through glibc's own write, which no preload reaches: a FILE on a
// matching path is made of the shim's write instead (fopencookie).
static ssize_t CookieWrite(void *cookie, const char *buf, size_t n) {
    const ssize_t done = write(static_cast<int>(reinterpret_cast<intptr_t>(cookie)), buf, n);
    return done < 0 ? 0 : done;  // stdio takes 0 as an error, errno kept
}
static int CookieClose(void *cookie) { return close(static_cast<int>(reinterpret_cast<intptr_t>(cookie))); }

static FILE *OpenFile(const char *path, const char *mode, const char *realName) {
    const bool writing = mode != nullptr && (mode[0] == 'w' || mode[0] == 'a') && std::strchr(mode, '+') == nullptr;
    if (!writing || !Matches(path)) {
        auto real = Next<FILE *(*)(const char *, const char *)>(realName);
        return real(path, mode);
    }
    const int fd = open(path, O_WRONLY | O_CREAT | (mode[0] == 'a' ? O_APPEND : O_TRUNC) | O_CLOEXEC, 0666);
    if (fd < 0) return nullptr;
    cookie_io_functions_t io{};
    io.write = CookieWrite;
    io.close = CookieClose;
    return fopencookie(reinterpret_cast<void *>(static_cast<intptr_t>(fd)), mode, io);
}

FILE *fopen(const char *path, const char *mode) { return OpenFile(path, mode, "fopen"); }
FILE *fopen64(const char *path, const char *mode) { return OpenFile(path, mode, "fopen64"); }

int __open_2(const char *path, int flags) { return open(path, flags); }
int __open64_2(const char *path, int flags) { return open64(path, flags); }

ssize_t write(int fd, const void *buf, size_t n) {
    static auto real = Next<ssize_t (*)(int, const void *, size_t)>("write");
    if (fd < 0 || fd >= kMaxFd || !gFull[fd] || n == 0) return real(fd, buf, n);
    const long long left = Budget();
    if (left <= 0) {
        errno = ENOSPC;
        return -1;
    }
    const size_t allowed = static_cast<long long>(n) > left ? static_cast<size_t>(left) : n;
    const ssize_t done = real(fd, buf, allowed);
    if (done > 0) gBudget -= done;
    return done;
}

int close(int fd) {
    static auto real = Next<int (*)(int)>("close");
    if (fd >= 0 && fd < kMaxFd) gFull[fd] = false;
    return real(fd);
}

}  // extern "C"
