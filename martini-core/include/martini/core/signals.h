// The run ends when a signal ends the process: SIGTERM, SIGINT and SIGHUP, where the
// program has not set a handler of its own (its disposition is the default, which
// ends the process without a word). For runtimes that do not turn these signals into
// an orderly exit themselves (Mono, a Lua host; a JVM runs its shutdown hooks and
// raises VMDeath): the clients write what they collected, then the signal ends the
// process as it would have, so that its exit status still tells which signal it was.
//
// The handler only writes the signal's number to a pipe; a thread of Martini's own
// (with every signal blocked) reads it and calls `end` there, outside the handler.
// Once per process: a later call replaces `end`; an empty `end` (before what it used
// is freed) waits for a run ending on the signal thread to finish.
#pragma once

#include <functional>
#include <string>

namespace martini::core {

// Returns "" or why the signals could not be watched (the run then ends as before).
std::string EndRunOnSignals(std::function<void()> end) noexcept;

}  // namespace martini::core
