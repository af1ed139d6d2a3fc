// Test clients' option splitting: "a:b:c" -> {"a", "b", "c"} (empty parts kept).
#pragma once

#include <string>
#include <vector>

inline std::vector<std::string> Split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const auto end = s.find(sep, start);
        out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return out;
}
