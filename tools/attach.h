// Reaching a running process from `martini attach` and `martini control`
// (docs/control.md):
//   - HotSpot's dynamic attach protocol, done here (no JDK tool needed on the host):
//     the attach trigger file, SIGQUIT, the UNIX socket /tmp/.java_pid<pid> as the
//     target sees its /tmp (its mount namespace, through /proc/PID/root), and the
//     "load" command that makes the JVM call the agent's Agent_OnAttach;
//   - the control FIFO /tmp/martini-<pid>.ctl that martini-core's ControlChannel reads,
//     with a reply FIFO of our own.
#pragma once

#include <string>
#include <vector>

namespace martini::tools {

// What is known of a process before touching it: "" when `pid` is a running JVM that
// can be attached to, else why not (no such process, not a JVM, attach disabled,
// signals reduced, another user's).
std::string CheckAttachable(long pid);

// The path under which the target sees `path` of ours (/proc/PID/root + path, when
// that exists and the target is in another mount namespace; `path` otherwise).
std::string InTargetRoot(long pid, const std::string &path);

// Loads the agent into the JVM: returns "" when Agent_OnAttach returned 0, else the
// cause (the JVM's own answer when it gave one). Waits up to `timeoutMs` for the
// JVM's attach listener to start.
std::string LoadAgent(long pid, const std::string &agentPath, const std::string &options, int timeoutMs = 10000);

// Sends one control command (its words) to the process and waits up to `timeoutMs`
// for the reply. Returns "" and fills `reply` (the lines the process sent: "note: ..."
// lines, then "ok ..." or "error: ..."), or says why nothing was answered.
std::string SendControl(long pid, const std::vector<std::string> &words, std::string &reply, int timeoutMs = 10000);

}  // namespace martini::tools
