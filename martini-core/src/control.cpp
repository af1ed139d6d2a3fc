#include "martini/core/control.h"

#include "martini/core/core.h"
#include "martini/core/log.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

namespace martini::core {

using namespace Martini::MPI;

void DetachClients(Core &core) noexcept {
    core.Raise<IEcDetachEventObserver>();
    core.Shutdown();
}

std::string ControlReply::Text() const {
    std::string text;
    for (const std::string &n : notes) text += "note: " + n + "\n";
    text += (ok ? "ok " : "error: ") + message + "\n";
    return text;
}

std::string ControlFifoPath(long pid) { return "/tmp/martini-" + std::to_string(pid) + ".ctl"; }

namespace {

bool AllDigits(std::string_view s) {
    if (s.empty() || s.size() > 18) return false;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
    }
    return true;
}

// A thread named by its Martini id or its name, among the runtime's live threads.
// Returns 0 and sets `error` when none or several match.
TId ResolveThread(Core &core, const std::string &what, std::string &error) {
    std::vector<TId> ids;
    if (core.Runtime().ListThreads(ids) != MRTE_RESULT_OK) {
        error = "this runtime cannot list its threads";
        return 0;
    }
    if (AllDigits(what)) {
        const TId id = std::stoull(what);
        for (TId t : ids) {
            if (t == id) return id;
        }
    }
    std::vector<TId> named;
    std::string known;
    for (TId t : ids) {
        ThreadFacts f;
        if (core.Runtime().DescribeThread(t, DR_THREAD_NAME, 1, f) != MRTE_RESULT_OK) continue;
        if (f.name == what) named.push_back(t);
        if (known.size() < 300) known += (known.empty() ? "" : ", ") + f.name + " (" + std::to_string(t) + ")";
    }
    if (named.size() == 1) return named[0];
    if (named.empty()) {
        error = "no live thread has the id or name '" + what + "' (threads: " + known + ")";
    } else {
        std::string list;
        for (TId t : named) list += (list.empty() ? "" : ", ") + std::to_string(t);
        error = std::to_string(named.size()) + " threads are named '" + what + "' (ids " + list + "): give the id";
    }
    return 0;
}

void RaiseCustom(Core &core, unsigned id, const std::string &data) {
    SEcCustomCommandEventData d;
    d.uiCommandId = id;
    d.szCommandData = data.c_str();
    d.validData = DR_COMMAND;
    core.Raise<IEcCustomCommandEventObserver>(d);
}

const char kCommands[] =
    "start, stop, pause, resume, pause-thread ID|NAME, resume-thread ID|NAME, sample NAME, interval NAME, output DIR, "
    "custom ID [DATA], terminate, detach";

ControlReply Run(Core &core, ControlTarget *target, const std::vector<std::string> &words) {
    ControlReply r;
    auto fail = [&r](std::string message) {
        r.ok = false;
        r.message = std::move(message);
        return r;
    };
    if (words.empty() || words[0].empty()) return fail("empty command (" + std::string(kCommands) + ")");
    const std::string &c = words[0];
    const std::size_t args = words.size() - 1;
    auto arity = [&](std::size_t min, std::size_t max, const char *usage) {
        if (args >= min && args <= max) return std::string();
        return "'" + c + "' takes " + usage;
    };
    std::string e;
    if (c == "start" || c == "resume" || c == "stop" || c == "pause") {
        if (!(e = arity(0, 0, "no argument (pause-thread/resume-thread take a thread)")).empty()) return fail(e);
        if (c == "start" || c == "resume") core.Raise<IEcStartEventObserver>();
        else core.Raise<IEcStopEventObserver>();
    } else if (c == "pause-thread" || c == "resume-thread") {
        if (!(e = arity(1, 1, "one thread id or name")).empty()) return fail(e);
        const TId id = ResolveThread(core, words[1], e);
        if (id == 0) return fail(e);
        RaiseCustom(core, c == "pause-thread" ? CC_THREAD_PAUSE : CC_THREAD_RESUME, std::to_string(id));
        r.message = c + " " + std::to_string(id);
        r.ok = true;
        return r;
    } else if (c == "sample" || c == "interval") {
        if (!(e = arity(1, 1, "one name")).empty()) return fail(e);
        const std::string &name = words[1];
        if (name.empty() || name.size() > 100 || name == "." || name == ".." ||
            name.find_first_of("/\\ \t\n\r") != std::string::npos) {
            return fail("a " + c + " point's name is up to 100 characters without '/', '\\' or spaces: '" + name + "'");
        }
        RaiseCustom(core, c == "sample" ? CC_SAMPLE : CC_INTERVAL, name);
    } else if (c == "output") {
        if (!(e = arity(1, 1, "one directory")).empty()) return fail(e);
        if (words[1].empty() || words[1][0] != '/') return fail("the output directory must be an absolute path: '" + words[1] + "'");
        SEcSetOutputDirectoryEventData d;
        d.szDirectoryName = words[1].c_str();
        d.validData = DR_COMMAND;
        core.Raise<IEcSetOutputDirectoryEventObserver>(d);
    } else if (c == "custom") {
        if (!(e = arity(1, 2, "an id and optional data")).empty()) return fail(e);
        if (!AllDigits(words[1]) || std::stoull(words[1]) < CC_USER || std::stoull(words[1]) > 0xFFFFFFFFull) {
            return fail("a custom command's id is a number from " + std::to_string(CC_USER) + " to 4294967295 (below: "
                        "Martini's own commands): '" + words[1] + "'");
        }
        RaiseCustom(core, static_cast<unsigned>(std::stoull(words[1])), args == 2 ? words[2] : std::string());
    } else if (c == "terminate" || c == "detach") {
        if (!(e = arity(0, 0, "no argument")).empty()) return fail(e);
        if (target != nullptr) {
            if (std::string why = target->Detach(core, r.notes); !why.empty()) return fail(c + " failed: " + why);
        } else {
            DetachClients(core);
        }
        r.ended = true;
    } else {
        return fail("unknown command '" + c + "' (" + kCommands + ")");
    }
    r.ok = true;
    r.message = c;
    for (std::size_t i = 1; i < words.size(); ++i) r.message += " " + words[i];
    return r;
}

}  // namespace

ControlReply RunControlCommand(Core &core, ControlTarget *target, const std::vector<std::string> &words) noexcept {
    try {
        return Run(core, target, words);
    } catch (const std::exception &ex) {
        ControlReply r;
        r.message = std::string("the command failed: ") + ex.what();
        return r;
    }
}

// ---- The FIFO ------------------------------------------------------------------------

struct ControlChannel::State {
    std::string path;
    int fifo = -1;
    int wake = -1;  // eventfd: Stop() ends the reader's poll
    Core *core = nullptr;
    ControlTarget *target = nullptr;
    std::thread reader;
    std::atomic<bool> stopping{false};
    std::mutex stopMutex;

    ~State() {
        if (fifo >= 0) ::close(fifo);
        if (wake >= 0) ::close(wake);
    }
};

namespace {

// Writes the reply into the FIFO the command named (made by `martini control` under
// /tmp, and open for reading there), in one write: it is read whole.
void Reply(const std::string &path, const std::string &text) {
    if (path.empty() || path == "-" || path.rfind("/tmp/", 0) != 0 || path.find("/../") != std::string::npos) return;
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;
    [[maybe_unused]] const ssize_t n = ::write(fd, text.data(), text.size());
    ::close(fd);
}

// One line: REPLY-FIFO TAB WORD [TAB ARG]... ("-" when no reply is wanted).
// Returns true when the channel should end (terminate/detach done).
bool HandleLine(ControlChannel::State &s, const std::string &line) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (true) {
        const std::size_t tab = line.find('\t', start);
        fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
        if (tab == std::string::npos) break;
        start = tab + 1;
    }
    const std::string reply = fields.front();
    fields.erase(fields.begin());
    const ControlReply r = RunControlCommand(*s.core, s.target, fields);
    if (!r.ok) LogLine("control: " + r.message);
    // Ended: the FIFO goes before the answer, so that once the sender has it, nothing
    // can be written here any more.
    if (r.ended) ::unlink(s.path.c_str());
    Reply(reply, r.Text());
    return r.ended;
}

void ReadCommands(std::shared_ptr<ControlChannel::State> s) {
    if (s->target != nullptr) s->target->ReaderStarted();
    std::string buffer;
    bool ended = false;
    while (!ended && !s->stopping.load(std::memory_order_acquire)) {
        pollfd fds[2] = {{s->fifo, POLLIN, 0}, {s->wake, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (fds[1].revents != 0) break;
        char chunk[512];
        const ssize_t n = ::read(s->fifo, chunk, sizeof chunk);
        if (n <= 0) continue;  // EAGAIN: another reader's wake-up
        buffer.append(chunk, static_cast<std::size_t>(n));
        std::size_t newline;
        while (!ended && (newline = buffer.find('\n')) != std::string::npos) {
            std::string line = buffer.substr(0, newline);
            buffer.erase(0, newline + 1);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (!line.empty()) ended = HandleLine(*s, line);
        }
        if (buffer.size() > 8192) buffer.clear();  // commands are words, not documents
    }
    if (s->target != nullptr) s->target->ReaderEnding();
}

}  // namespace

ControlChannel::ControlChannel() = default;
ControlChannel::~ControlChannel() { Stop(); }

// The FIFOs of this user's processes that ended without removing theirs (SIGKILL, a
// crash): /tmp/martini-<pid>.ctl of a pid that no longer runs.
void RemoveStaleFifos() {
    DIR *d = ::opendir("/tmp");
    if (d == nullptr) return;
    while (const dirent *e = ::readdir(d)) {
        long pid = 0;
        int end = 0;
        if (std::sscanf(e->d_name, "martini-%ld.ctl%n", &pid, &end) != 1 || e->d_name[end] != '\0' || pid <= 0) {
            continue;
        }
        const std::string path = ControlFifoPath(pid);
        struct stat st;
        if (::lstat(path.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != ::geteuid()) continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ::unlink(path.c_str());
    }
    ::closedir(d);
}

std::string ControlChannel::Start(Core &core, ControlTarget *target) {
    if (state_) return "the control channel is already started";
    RemoveStaleFifos();
    auto s = std::make_shared<State>();
    s->core = &core;
    s->target = target;
    s->path = ControlFifoPath(static_cast<long>(::getpid()));
    ::unlink(s->path.c_str());  // a stale FIFO of an earlier process with this pid
    if (::mkfifo(s->path.c_str(), 0600) != 0) return "cannot create " + s->path + ": " + std::strerror(errno);
    // Read-write: the open does not wait for a writer, and the reader never sees the
    // end of the file when a writer leaves.
    s->fifo = ::open(s->path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    s->wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->fifo < 0 || s->wake < 0) {
        const std::string why = std::strerror(errno);
        ::unlink(s->path.c_str());
        return "cannot open " + s->path + ": " + why;
    }
    try {
        s->reader = std::thread(ReadCommands, s);
    } catch (const std::exception &e) {
        ::unlink(s->path.c_str());
        return std::string("cannot start the control thread: ") + e.what();
    }
    state_ = std::move(s);
    return "";
}

void ControlChannel::Stop() noexcept {
    const std::shared_ptr<State> s = std::move(state_);
    if (!s) return;
    std::lock_guard lock(s->stopMutex);
    s->stopping.store(true, std::memory_order_release);
    ::unlink(s->path.c_str());
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(s->wake, &one, sizeof one);
    if (!s->reader.joinable()) return;
    if (s->reader.get_id() == std::this_thread::get_id()) {
        s->reader.detach();  // a command (terminate) stops the channel it came through
    } else {
        try {
            s->reader.join();
        } catch (...) {
        }
    }
}

}  // namespace martini::core
