// One line per message on stderr, prefixed "martini: ". Used at module boundaries
// only (client loading, contained failures), never on the event path.
#pragma once

#include <string_view>

namespace martini::core {

void LogLine(std::string_view message) noexcept;

}  // namespace martini::core
