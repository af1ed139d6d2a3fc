// External control of a running process: the collector API's experiment controls
// (pause and resume, globally or for one thread; named sample points; terminate) plus
// detach, the output directory and custom commands, mapped onto MPI's external-control
// events (docs/control.md has the table). Every provider offers them the same way:
//
//   - from outside, `martini control PID COMMAND...` writes one line into the FIFO
//     /tmp/martini-<pid>.ctl, which a ControlChannel reads on a thread of its own;
//   - from inside (the interpreter C ABI's martini_control), RunControlCommand directly.
//
// A provider starts a ControlChannel once the clients are live (after FinishInit and
// SetLive) and stops it before the core is shut down at the runtime's end. It passes a
// ControlTarget for what only it can do: terminate/detach (take its instrumentation
// out) and making the reader thread one the runtime knows. Wire format and replies:
// docs/control.md.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace martini::core {

class Core;

// The provider's side of the commands. Called on the thread that runs the command
// (the channel's reader thread, or the interpreter's caller); never concurrently.
class ControlTarget {
public:
    virtual ~ControlTarget() = default;
    // `terminate` and `detach`: the provider stops collecting and takes out what it put
    // into the runtime (instrumentation, events), the program running on. It must call
    // DetachClients(core) at the point where the clients should write their outputs
    // (after it stopped raising events, before it releases what data requests need).
    // Lines in `notes` are passed to the caller ("note: ..." in the reply). Returns ""
    // or why it failed.
    virtual std::string Detach(Core &core, std::vector<std::string> &notes) noexcept = 0;
    // The reader thread is starting (ending): a provider makes it a thread the runtime
    // knows here, so that clients' data requests work from control events' handlers.
    virtual void ReaderStarted() noexcept {}
    virtual void ReaderEnding() noexcept {}
};

// EcDetach to every client that observes it, then Core::Shutdown (no event is
// delivered any more; VmShutdown; the clients write their outputs there).
void DetachClients(Core &core) noexcept;

// The result of one command.
struct ControlReply {
    bool ok = false;
    bool ended = false;                // terminate/detach done: no more commands
    std::string message;               // "pause", "sample before-gc", or the error
    std::vector<std::string> notes;    // said before the result (ControlTarget::Detach)
    // The reply as sent back over the channel: "note: ..." lines, then "ok MESSAGE" or
    // "error: MESSAGE".
    std::string Text() const;
};

// Runs one command, given as its words:
//   start | resume                 EcStart
//   stop | pause                   EcStop
//   pause-thread ID|NAME           EcCustomCommand CC_THREAD_PAUSE, data: the thread id
//   resume-thread ID|NAME          EcCustomCommand CC_THREAD_RESUME
//   sample NAME                    EcCustomCommand CC_SAMPLE, data: NAME
//   interval NAME                  EcCustomCommand CC_INTERVAL, data: NAME
//   output DIR                     EcSetOutputDirectory
//   custom ID [DATA]               EcCustomCommand ID (>= CC_USER), data: DATA or ""
//   terminate | detach             ControlTarget::Detach (without one: DetachClients)
// A bad command or argument raises nothing and says why. Any thread that is not inside
// a Martini handler; `target` may be null (no detach of its own).
ControlReply RunControlCommand(Core &core, ControlTarget *target, const std::vector<std::string> &words) noexcept;

// The FIFO of the process with this id.
std::string ControlFifoPath(long pid);

// The FIFO and its reader thread. Start once; Stop (or the destructor) removes the
// FIFO and ends the thread (joined, unless Stop runs on that thread itself).
class ControlChannel {
public:
    ControlChannel();
    ~ControlChannel();
    ControlChannel(const ControlChannel &) = delete;
    ControlChannel &operator=(const ControlChannel &) = delete;

    // Creates /tmp/martini-<pid>.ctl (mode 0600; a stale one is replaced) and starts
    // the reader; first removes the FIFOs this user's ended processes left (killed
    // with SIGKILL: no Stop). Returns "" or why not (the process then runs uncontrolled).
    std::string Start(Core &core, ControlTarget *target);
    void Stop() noexcept;

    struct State;  // shared with the reader thread

private:
    std::shared_ptr<State> state_;
};

}  // namespace martini::core
