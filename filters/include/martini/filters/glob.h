// Wildcard matching for rule sets and client options: '*' matches any run of
// characters (also none), '?' exactly one; everything else matches itself.
#pragma once

#include <string_view>

namespace martini::filters {

// Linear-time matcher with one backtrack point (the last '*'), no allocation.
inline bool GlobMatch(std::string_view pattern, std::string_view text) {
    std::size_t p = 0, t = 0;
    std::size_t starP = std::string_view::npos, starT = 0;
    while (t < text.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
            ++p;
            ++t;
        } else if (p < pattern.size() && pattern[p] == '*') {
            starP = p++;
            starT = t;
        } else if (starP != std::string_view::npos) {
            p = starP + 1;
            t = ++starT;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

}  // namespace martini::filters
