#include "control.h"

#include "martini/core/core.h"
#include "martini/core/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace martini::jvm {

using namespace Martini::MPI;

namespace {

std::string gPath;
std::atomic<bool> gStopped{false};

// Writes "ok <command>" to the reply FIFO a command named, when it is carried out.
void Reply(const std::string &path, const std::string &what) {
    if (path.empty() || path.rfind("/tmp/", 0) != 0) return;
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd < 0) return;
    const std::string line = what + "\n";
    [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
    ::close(fd);
}

// Reads commands, one per line, from each writer in turn: "start [REPLY-FIFO]" or
// "stop [REPLY-FIFO]". `martini control` waits on its reply FIFO until the command
// was carried out.
void ReadCommands(core::Core *core) {
    while (!gStopped.load()) {
        const int fd = ::open(gPath.c_str(), O_RDONLY);  // blocks until a writer comes
        if (fd < 0) {
            if (errno == EINTR) continue;
            return;
        }
        std::string text;
        char buf[256];
        for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
            if (n < 0) {
                if (errno == EINTR) continue;
                break;
            }
            text.append(buf, static_cast<std::size_t>(n));
            if (text.size() > 4096) break;  // commands are words, not documents
        }
        ::close(fd);
        std::size_t start = 0;
        while (start < text.size()) {
            std::size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            std::string line = text.substr(start, end - start);
            start = end + 1;
            while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
            if (line.empty()) continue;
            const std::size_t space = line.find(' ');
            const std::string command = line.substr(0, space);
            const std::string reply = space == std::string::npos ? "" : line.substr(space + 1);
            if (command == "start") {
                core->Raise<IEcStartEventObserver>();
                Reply(reply, "ok start");
            } else if (command == "stop") {
                core->Raise<IEcStopEventObserver>();
                Reply(reply, "ok stop");
            } else {
                core::LogF("unknown control command '%s' (start, stop)", command.c_str());
                Reply(reply, "unknown command");
            }
        }
    }
}

}  // namespace

std::string ControlPath(long pid) { return "/tmp/martini-" + std::to_string(pid) + ".ctl"; }

bool ControlWanted(const core::Core &core) {
    return core.HasObservers(EV_EC_START) || core.HasObservers(EV_EC_STOP);
}

std::string StartControl(core::Core &core) {
    gPath = ControlPath(static_cast<long>(::getpid()));
    ::unlink(gPath.c_str());  // a stale FIFO of an earlier process with this pid
    if (::mkfifo(gPath.c_str(), 0600) != 0) return "cannot create " + gPath + ": " + std::strerror(errno);
    try {
        std::thread(ReadCommands, &core).detach();
    } catch (const std::exception &e) {
        ::unlink(gPath.c_str());
        return std::string("cannot start the control thread: ") + e.what();
    }
    return "";
}

void StopControl() {
    if (gPath.empty()) return;
    gStopped.store(true);
    ::unlink(gPath.c_str());
}

}  // namespace martini::jvm
