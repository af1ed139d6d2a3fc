// A client's option names, for what is said about a name that is none of them
// ("unknown option 'tpo' (did you mean 'top'?)"), and the body of MPICL_CheckOptions:
//
//   extern "C" API_EXPORT const char *MPICL_CheckOptions(const char *options);
//
// an optional export of a client library that `martini run` and `martini attach` call
// before the program starts (tools/common.h, CheckClientOptions), without a runtime, so
// that a typo is named before a long run goes by unprofiled. It returns NULL when the
// options are good, else the problem (one line; for `help`, the usage). It must use the
// parser MPICL_Instantiate uses, and register nothing.
// Header-only; no dependencies beyond the C++ library.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace martini::clients {

// The Damerau-Levenshtein distance of `a` and `b` (its optimal string alignment form):
// how many insertions, deletions, substitutions and swaps of two neighbouring
// characters make one of the other, no part edited twice.
inline std::size_t EditDistance(std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[a.size()][b.size()];
}

// The name in `names` nearest to `word`, when it is at most 2 edits away and fewer
// edits than `word` has characters (so that "x" is not taken for "top"); the first of
// equally near ones. "" when none is.
inline std::string NearestName(std::string_view word, std::span<const char *const> names) {
    std::string best;
    std::size_t bestDistance = 3;
    for (const char *name : names) {
        const std::size_t d = EditDistance(word, name);
        if (d < bestDistance && d < word.size()) {
            best = name;
            bestDistance = d;
        }
    }
    return best;
}

// "unknown option 'tpo' (did you mean 'top'?)"; when no name is near, the names:
// "unknown option 'colour' (known: top, out, include, time)".
inline std::string UnknownOption(const std::string &key, std::span<const char *const> names) {
    std::string message = "unknown option '" + key + "'";
    if (const std::string near = NearestName(key, names); !near.empty()) {
        message.append(" (did you mean '").append(near).append("'?)");
        return message;
    }
    message.append(" (known: ");
    for (std::size_t i = 0; i < names.size(); ++i) message.append(i ? ", " : "").append(names[i]);
    message.append(")");
    return message;
}

// "" when `key` is one of `names`, else UnknownOption. A parser asks this first, so
// that its names and what it accepts cannot drift apart.
inline std::string CheckOptionName(const std::string &key, std::span<const char *const> names) {
    for (const char *name : names) {
        if (key == name) return "";
    }
    return UnknownOption(key, names);
}

// MPICL_CheckOptions' body: `parse(text, options)` on options of its own (the parser
// MPICL_Instantiate uses, returning "" or the problem). NULL when the options are
// good, else the problem, kept until the next call. `help` (or `--help`) returns
// `usage` when the client has one: MPICL_Instantiate prints it and refuses.
// The problem is a static under a lock, not thread_local: a library loaded only to
// check its options and unloaded again must leave no thread-local block behind (the
// leak checker's thread scan crashed on one such block in a process that had loaded
// and unloaded six clients).
template <class Options, class Parse>
const char *CheckOptions(const char *text, Parse parse, const char *usage = nullptr) {
    static std::mutex mutex;
    static std::string problem;
    const std::lock_guard lock(mutex);
    const std::string s = text ? text : "";
    try {
        if (usage != nullptr && (s == "help" || s == "--help")) {
            problem = usage;
        } else {
            Options options;
            problem = parse(text ? text : "", options);
        }
    } catch (const std::exception &e) {
        problem = std::string("the options could not be checked: ") + e.what();
    }
    return problem.empty() ? nullptr : problem.c_str();
}

}  // namespace martini::clients
