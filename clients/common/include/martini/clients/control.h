// Experiment control as the bundled clients honour it (docs/control.md): the
// EcCustomCommand ids of MPI's EControlCommand, and the files of a sample point.
#pragma once

#include <MpiAPI.h>

#include "martini/clients/output.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace martini::clients {

// EcCustomCommand: CC_SAMPLE calls sample(label); CC_THREAD_PAUSE and CC_THREAD_RESUME
// call pauseThread(threadId, paused). Other ids (clients' own) are left alone.
template <class Sample, class PauseThread>
void HandleControlCommand(const Martini::MPI::SEcCustomCommandEventData &d, Sample &&sample,
                          PauseThread &&pauseThread) {
    using namespace Martini::MPI;
    if (!(d.validData & DR_COMMAND) || d.szCommandData == nullptr) return;
    if (d.uiCommandId == CC_SAMPLE) {
        sample(std::string(d.szCommandData));
    } else if (d.uiCommandId == CC_THREAD_PAUSE || d.uiCommandId == CC_THREAD_RESUME) {
        pauseThread(static_cast<TId>(std::strtoull(d.szCommandData, nullptr, 10)), d.uiCommandId == CC_THREAD_PAUSE);
    }
}

// A sample point's output options: files named <name>-<label>, no table (the table is
// printed at the end only). Says the sample point on the terminal.
inline OutputOptions SamplePointOutput(const char *tool, OutputOptions o, const std::string &label) {
    o.name += "-" + label;
    o.top = 0;
    std::fprintf(stderr, "%s: sample point '%s'\n", tool, label.c_str());
    return o;
}

}  // namespace martini::clients
