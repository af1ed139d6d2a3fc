// Experiment control as the bundled clients honour it (docs/control.md): the
// EcCustomCommand ids of MPI's EControlCommand, and the files of a sample point.
#pragma once

#include <MpiAPI.h>

#include "martini/clients/output.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace martini::clients {

// EcCustomCommand: CC_SAMPLE calls sample(label), CC_INTERVAL interval(label);
// CC_THREAD_PAUSE and CC_THREAD_RESUME call pauseThread(threadId, paused). Other ids
// (clients' own) are left alone.
template <class Sample, class Interval, class PauseThread>
void HandleControlCommand(const Martini::MPI::SEcCustomCommandEventData &d, Sample &&sample, Interval &&interval,
                          PauseThread &&pauseThread) {
    using namespace Martini::MPI;
    if (!(d.validData & DR_COMMAND) || d.szCommandData == nullptr) return;
    if (d.uiCommandId == CC_SAMPLE) {
        sample(std::string(d.szCommandData));
    } else if (d.uiCommandId == CC_INTERVAL) {
        interval(std::string(d.szCommandData));
    } else if (d.uiCommandId == CC_THREAD_PAUSE || d.uiCommandId == CC_THREAD_RESUME) {
        pauseThread(static_cast<TId>(std::strtoull(d.szCommandData, nullptr, 10)), d.uiCommandId == CC_THREAD_PAUSE);
    }
}

// CC_INTERVAL in a client whose profile covers the whole run: says so, writes nothing.
inline void IntervalNotKept(const char *tool, const std::string &label) {
    std::fprintf(stderr,
                 "%s: interval point '%s' not written: %s keeps no intervals (cgprof's sample mode does; a sample "
                 "point writes everything so far)\n",
                 tool, label.c_str(), tool);
}

// A sample (or interval) point's output options: files named <name>-<label>, no table
// (the table is printed at the end only). Says the point on the terminal.
inline OutputOptions SamplePointOutput(const char *tool, OutputOptions o, const std::string &label,
                                       const char *what = "sample point") {
    o.name += "-" + label;
    o.top = 0;
    std::fprintf(stderr, "%s: %s '%s'\n", tool, what, label.c_str());
    return o;
}

}  // namespace martini::clients
