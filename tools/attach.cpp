#include "attach.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace martini::tools {

namespace {

std::string ProcFile(long pid, const char *name) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/" + name, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The process's id in its own pid namespace (the last NSpid), which the JVM uses in
// its file names; `pid` when not in another namespace.
long NamespacePid(long pid) {
    std::istringstream status(ProcFile(pid, "status"));
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("NSpid:", 0) != 0) continue;
        std::istringstream ids(line.substr(6));
        long id = pid, last = pid;
        while (ids >> id) last = id;
        return last;
    }
    return pid;
}

// Whether the process sees another root or mount namespace than ours.
bool OtherRoot(long pid) {
    struct stat mine {}, theirs {};
    const std::string root = "/proc/" + std::to_string(pid) + "/root";
    if (::stat("/", &mine) != 0 || ::stat(root.c_str(), &theirs) != 0) return false;
    return mine.st_dev != theirs.st_dev || mine.st_ino != theirs.st_ino;
}

std::string Errno(const std::string &what) { return what + ": " + std::strerror(errno); }

bool IsSocket(const std::string &path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// The process's effective user id (/proc/PID/status "Uid:", its second field); -1 when
// it cannot be read.
long EffectiveUid(long pid) {
    std::istringstream status(ProcFile(pid, "status"));
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("Uid:", 0) != 0) continue;
        std::istringstream ids(line.substr(4));
        long real = -1, effective = -1;
        ids >> real >> effective;
        return effective;
    }
    return -1;
}

// The attach socket is the JVM's own, as the JDK's tools check: a socket (not a link),
// owned by the JVM's user, which no one else may read or write.
std::string CheckSocketOwner(long pid, const std::string &path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return Errno("cannot examine " + path);
    if (!S_ISSOCK(st.st_mode)) return path + " is not a socket";
    const long uid = EffectiveUid(pid);
    if (uid < 0 || static_cast<long>(st.st_uid) != uid) {
        return path + " belongs to user " + std::to_string(st.st_uid) + ", not to the JVM's user " +
               std::to_string(uid) + ": not the JVM's socket (planted by another user?); nothing was sent";
    }
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        return path + " may be used by other users (mode " + std::to_string(st.st_mode & 0777) +
               "): not the JVM's socket; nothing was sent";
    }
    return "";
}

// The process listening on the connected socket is the JVM itself (SO_PEERCRED: its
// pid, as we see it, and its user).
std::string CheckPeer(int sock, long pid, const std::string &path) {
    ucred peer{};
    socklen_t size = sizeof peer;
    if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) return Errno("cannot tell who listens on " + path);
    if (static_cast<long>(peer.pid) != pid) {
        return "the socket " + path + " is served by process " + std::to_string(peer.pid) + ", not by the JVM " +
               std::to_string(pid) + " (planted by another program?); nothing was sent";
    }
    if (static_cast<long>(peer.uid) != EffectiveUid(pid)) {
        return "the socket " + path + " is served by user " + std::to_string(peer.uid) +
               ", not by the JVM's user; nothing was sent";
    }
    return "";
}

// Creates the attach trigger `path` (never through a link, never over a file that is
// not a plain file of its own): "" when it is there to be seen by the JVM.
std::string CreateTrigger(const std::string &path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0660);
    if (fd >= 0) {
        ::close(fd);
        return "";
    }
    if (errno != EEXIST) return Errno("cannot create the attach trigger " + path);
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) return "";  // an earlier one
    return path + " exists and is not a trigger of ours (a link or another user's file?)";
}


}  // namespace

std::string InTargetRoot(long pid, const std::string &path) {
    return OtherRoot(pid) ? "/proc/" + std::to_string(pid) + "/root" + path : path;
}

std::string CheckAttachable(long pid) {
    const std::string p = std::to_string(pid);
    if (::kill(static_cast<pid_t>(pid), 0) != 0) {
        if (errno == ESRCH) return "no process " + p + " is running";
        if (errno == EPERM) return "process " + p + " belongs to another user (attach as that user or as root)";
        return Errno("cannot signal process " + p);
    }
    const std::string maps = ProcFile(pid, "maps");
    if (maps.empty()) return "cannot read /proc/" + p + "/maps (another user's process?)";
    if (maps.find("/libjvm.so") == std::string::npos) {
        std::string comm = ProcFile(pid, "comm");
        while (!comm.empty() && comm.back() == '\n') comm.pop_back();
        return "process " + p + " (" + comm + ") is not a Java virtual machine (no libjvm.so in it)";
    }
    // Its command line, NUL-separated: options that make attaching impossible. (A JVM
    // started with -Xrs would be ended by the SIGQUIT that starts the attach listener.)
    const std::string cmdline = ProcFile(pid, "cmdline");
    std::size_t start = 0;
    while (start < cmdline.size()) {
        const std::size_t end = cmdline.find('\0', start);
        const std::string arg = cmdline.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (arg == "-XX:+DisableAttachMechanism") {
            return "the JVM " + p + " was started with -XX:+DisableAttachMechanism: it takes no agent while it runs";
        }
        if (arg == "-Xrs") return "the JVM " + p + " was started with -Xrs: the signal that starts its attach listener would end it";
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return "";
}

namespace {

// The JVM's attach listener, started: the trigger, a file .attach_pid<pid> in the JVM's
// working directory (else its /tmp), owned by the JVM's user, then SIGQUIT; the JVM
// then opens its socket. "" once `socketPath` is there, else why not.
std::string StartAttachListener(long pid, long nspid, const std::string &socketPath, int timeoutMs) {
    std::string trigger = "/proc/" + std::to_string(pid) + "/cwd/.attach_pid" + std::to_string(nspid);
    if (const std::string inCwd = CreateTrigger(trigger); !inCwd.empty()) {
        trigger = InTargetRoot(pid, "/tmp/.attach_pid" + std::to_string(nspid));
        if (const std::string inTmp = CreateTrigger(trigger); !inTmp.empty()) return inCwd + "; " + inTmp;
    }
    if (::kill(static_cast<pid_t>(pid), SIGQUIT) != 0) {
        ::unlink(trigger.c_str());
        return Errno("cannot signal process " + std::to_string(pid));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    while (!IsSocket(socketPath) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::unlink(trigger.c_str());
    if (!IsSocket(socketPath)) {
        return "the JVM did not open its attach socket " + socketPath + " within " + std::to_string(timeoutMs / 1000) +
               " s (attach disabled, or a JVM too busy or too old)";
    }
    return "";
}

}  // namespace

std::string LoadAgent(long pid, const std::string &agentPath, const std::string &options, int timeoutMs) {
    const long nspid = NamespacePid(pid);
    const std::string socketPath = InTargetRoot(pid, "/tmp/.java_pid" + std::to_string(nspid));
    if (!IsSocket(socketPath)) {
        if (std::string e = StartAttachListener(pid, nspid, socketPath, timeoutMs); !e.empty()) return e;
    }
    if (std::string e = CheckSocketOwner(pid, socketPath); !e.empty()) return e;
    const int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0) return Errno("cannot make a socket");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socketPath.size() >= sizeof addr.sun_path) {
        ::close(sock);
        return "the attach socket's path is too long: " + socketPath;
    }
    std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
    if (::connect(sock, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
        const std::string why = Errno("cannot connect to " + socketPath);
        ::close(sock);
        return why + (errno == ECONNREFUSED ? " (a stale socket of a JVM that is gone?)" : "");
    }
    if (std::string e = CheckPeer(sock, pid, socketPath); !e.empty()) {
        ::close(sock);
        return e;
    }
    // Protocol 1: "1", the command and three arguments, each NUL-terminated.
    std::string request;
    for (const std::string &part : {std::string("1"), std::string("load"), agentPath, std::string("true"), options}) {
        request += part;
        request += '\0';
    }
    for (std::size_t sent = 0; sent < request.size();) {
        const ssize_t n = ::send(sock, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            const std::string why = Errno("cannot write to the JVM's attach socket");
            ::close(sock);
            return why;
        }
        sent += static_cast<std::size_t>(n);
    }
    // The answer: the command's status ("0": carried out), then for load the agent's
    // "return code: N" (JDK 9+) or the JVM's message.
    std::string answer;
    char buf[1024];
    for (ssize_t n; (n = ::recv(sock, buf, sizeof buf, 0)) != 0;) {
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        answer.append(buf, static_cast<std::size_t>(n));
    }
    ::close(sock);
    std::istringstream lines(answer);
    std::string status, rest, line;
    std::getline(lines, status);
    while (std::getline(lines, line)) rest += (rest.empty() ? "" : " ") + line;
    if (status != "0") {
        return "the JVM refused to load the agent: " + (rest.empty() ? "status " + status : rest);
    }
    if (rest.rfind("return code: ", 0) == 0) {
        const std::string code = rest.substr(13);
        if (code == "0") return "";
        return "the agent refused to start (Agent_OnAttach returned " + code + "; the JVM's standard error says why)";
    }
    if (rest.empty() || rest == "0") return "";
    return "the JVM refused to load the agent: " + rest;
}

std::string SendControl(long pid, const std::vector<std::string> &words, std::string &reply, int timeoutMs) {
    reply.clear();
    for (const std::string &w : words) {
        if (w.find_first_of("\t\n\r") != std::string::npos) return "a command's words hold no tab or line break";
    }
    const std::string fifo = InTargetRoot(pid, "/tmp/martini-" + std::to_string(pid) + ".ctl");
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENXIO) {
            return "no Martini agent is listening in process " + std::to_string(pid) +
                   " (not running, not under Martini, or detached)";
        }
        return Errno("cannot open " + fifo);
    }
    // A reply FIFO of our own, open before the command goes out, where the target
    // sees it (its /tmp).
    std::string dir = InTargetRoot(pid, "/tmp/martini-control-XXXXXX");
    if (::mkdtemp(dir.data()) == nullptr) {
        ::close(fd);
        return Errno("cannot make a reply directory");
    }
    const std::string replyPath = dir + "/reply";
    const std::string replyInTarget = "/tmp/" + dir.substr(dir.rfind('/') + 1) + "/reply";
    int replyFd = -1;
    if (::mkfifo(replyPath.c_str(), 0600) == 0) replyFd = ::open(replyPath.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    auto cleanup = [&] {
        if (replyFd >= 0) ::close(replyFd);
        ::unlink(replyPath.c_str());
        ::rmdir(dir.c_str());
    };
    std::string line = replyFd >= 0 ? replyInTarget : "-";
    for (const std::string &w : words) line += "\t" + w;
    line += "\n";
    const bool ok = line.size() <= PIPE_BUF && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    if (!ok) {
        cleanup();
        return line.size() > PIPE_BUF ? "the command is too long" : Errno("cannot write to " + fifo);
    }
    // The reply ends with its "ok ..." or "error: ..." line.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    auto done = [&reply] {
        if (reply.size() < 2 || reply.back() != '\n') return false;
        const std::size_t prev = reply.rfind('\n', reply.size() - 2);
        const std::string last = reply.substr(prev == std::string::npos ? 0 : prev + 1);
        return last.rfind("ok", 0) == 0 || last.rfind("error: ", 0) == 0;
    };
    while (replyFd >= 0 && !done() && std::chrono::steady_clock::now() < deadline) {
        pollfd p{replyFd, POLLIN, 0};
        if (::poll(&p, 1, 50) > 0) {
            char buf[4096];
            const ssize_t n = ::read(replyFd, buf, sizeof buf);
            if (n > 0) reply.append(buf, static_cast<std::size_t>(n));
        }
    }
    cleanup();
    if (!done()) {
        return "process " + std::to_string(pid) + " did not answer within " + std::to_string(timeoutMs / 1000) + " s";
    }
    return "";
}

}  // namespace martini::tools
