// Control from outside (`martini control PID ...`, docs/control.md): the core's
// ControlChannel reads the commands on a thread of its own, which this component makes
// a JVM daemon thread ("Martini control") so that clients' data requests work from the
// handlers of the events it raises. Detach is the agent's (agent.cpp): this component
// forwards it there.
#pragma once

#include "martini/core/control.h"

#include <functional>
#include <string>
#include <vector>

namespace martini::core {
class Core;
}

namespace martini::jvm {

using DetachFunction = std::function<std::string(core::Core &, std::vector<std::string> &)>;

// Creates /tmp/martini-<pid>.ctl and its reader for `core` (VMInit, or at attach);
// `detach` carries out terminate/detach. Says why when it cannot, and the JVM runs on.
void StartControl(core::Core &core, DetachFunction detach);
// Removes the FIFO and ends the reader (VMDeath; after a detach it has ended itself).
void StopControl();

}  // namespace martini::jvm
