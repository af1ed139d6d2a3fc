// The text tables' cells and layout, shared by the top table (profile.cpp) and the
// hot-lines table (sampled_profile.cpp).
#pragma once

#include "martini/report/profile.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace martini::report::detail {

// "12.5%" of `whole`, "-" when it is 0.
std::string Percent(std::uint64_t part, std::uint64_t whole);
// `value` in `unit` (three decimals under 10, one above; counts as they are).
std::string InUnit(std::uint64_t value, const QuantityUnit &unit);
// Each column as wide as its widest cell, two spaces apart; the first left-aligned.
void WriteAligned(const std::vector<std::vector<std::string>> &table, std::ostream &out);
// Adds `from`'s (line, samples) pairs into `into` (both ascending by line).
void AddLines(std::vector<std::pair<std::uint32_t, std::uint64_t>> &into,
              const std::vector<std::pair<std::uint32_t, std::uint64_t>> &from);

// value * part / whole, without overflow; 0 when whole is 0.
inline std::uint64_t MulDiv(std::uint64_t value, std::uint64_t part, std::uint64_t whole) {
    __extension__ using Wide = unsigned __int128;
    return whole == 0 ? 0 : static_cast<std::uint64_t>(Wide(value) * part / whole);
}

}  // namespace martini::report::detail
