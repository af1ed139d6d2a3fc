// Martini's one logging path: one line per message on stderr, prefixed "martini: ".
// Used by the core, every provider and the client loader at module boundaries (client
// loading, bad configuration, contained failures), never on the event path. A message
// names the cause and says what still works ("...; the JVM runs on without it").
#pragma once

#include <string_view>

namespace martini::core {

// Writes "martini: <message>\n" in one write, so lines from several threads do not
// interleave. Never throws; may be called from any thread (not from a signal handler).
void LogLine(std::string_view message) noexcept;

// printf-style form of LogLine, for C callers' messages and numbers.
void LogF(const char *format, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace martini::core
