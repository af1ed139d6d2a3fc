// External control of a running JVM: `martini control PID start|stop` writes a
// command into the FIFO /tmp/martini-<pid>.ctl that the agent reads on a thread of its
// own, and the agent raises EcStart / EcStop to the clients (cgprof pauses and
// resumes on them). The FIFO exists only while a client observes EcStart or EcStop.
#pragma once

#include <string>

namespace martini::core {
class Core;
}

namespace martini::jvm {

// The FIFO's path for a process.
std::string ControlPath(long pid);

// Whether some client observes EcStart or EcStop: the control component is wanted.
bool ControlWanted(const core::Core &core);

// Creates the FIFO and starts the reader thread (detached). Returns "" or the error.
std::string StartControl(core::Core &core);
// Removes the FIFO (the reader thread ends with the process).
void StopControl();

}  // namespace martini::jvm
