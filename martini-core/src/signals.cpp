#include "martini/core/signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

namespace martini::core {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};

int gPipe[2] = {-1, -1};
pid_t gPid = 0;  // a child forked without exec has the handler but not the thread
std::mutex gMutex;  // guards gEnd and gStarted
std::function<void()> gEnd;
bool gStarted = false;

void OnSignal(int sig) {
    if (::getpid() != gPid) {  // a forked child: the signal ends it as it would have
        struct sigaction dfl{};
        dfl.sa_handler = SIG_DFL;
        ::sigaction(sig, &dfl, nullptr);
        ::raise(sig);
        return;
    }
    const int saved = errno;
    const unsigned char b = static_cast<unsigned char>(sig);
    [[maybe_unused]] const ssize_t n = ::write(gPipe[1], &b, 1);  // a full pipe: one is on its way
    errno = saved;
}

void Watch() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    unsigned char sig = 0;
    for (;;) {
        const ssize_t n = ::read(gPipe[0], &sig, 1);
        if (n == 1) break;
        if (n < 0 && errno == EINTR) continue;
        return;
    }
    {
        // Held while the run ends: a provider clearing `end` before it frees what
        // `end` uses waits for it.
        std::lock_guard lock(gMutex);
        if (gEnd) {
            try {
                gEnd();
            } catch (...) {  // the signal still ends the process
            }
        }
    }
    // As the signal would have ended the process: the default disposition, then the
    // signal again, to the process (this thread blocks it; another takes it).
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    ::kill(::getpid(), sig);
    for (;;) ::pause();
}

}  // namespace

std::string EndRunOnSignals(std::function<void()> end) noexcept {
    try {
        std::lock_guard lock(gMutex);
        gEnd = std::move(end);
        if (gStarted) return "";
        if (::pipe2(gPipe, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
        gPid = ::getpid();
        std::thread(Watch).detach();
        gStarted = true;
        for (int sig : kSignals) {
            struct sigaction old{};
            if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL ||
                (old.sa_flags & SA_SIGINFO) != 0) {
                continue;  // the program's own handler (or SIG_IGN) stays
            }
            struct sigaction sa{};
            sa.sa_handler = OnSignal;
            sigemptyset(&sa.sa_mask);
            sa.sa_flags = SA_RESTART;
            ::sigaction(sig, &sa, nullptr);
        }
        return "";
    } catch (const std::exception &e) {
        return e.what();
    }
}

}  // namespace martini::core
