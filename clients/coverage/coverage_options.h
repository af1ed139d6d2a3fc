// The coverage client's options: which classes it covers, the formats it writes,
// where it finds sources. Parsed alone by MPICL_CheckOptions before a run starts.
#pragma once

#include <MpiAPI.h>

#include "martini/clients/names.h"
#include "martini/clients/option_names.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace martini::coverage_client {

enum Format : unsigned { kLcov = 1, kCobertura = 2, kHtml = 4 };
inline constexpr unsigned kAllFormats = kLcov | kCobertura | kHtml;

// The runtime's own library, left out unless `all` or an include= names it.
inline const std::vector<std::string> &RuntimeLibrary(Martini::MPI::ERuntimeType runtime) {
    static const std::vector<std::string> jvm = {"java.", "javax.", "jdk.", "sun.", "com.sun.", "org.w3c.dom.",
                                                 "org.xml.sax.", "org.ietf.jgss.", "martini."};
    static const std::vector<std::string> mono = {"System.", "Mono.", "Microsoft.", "Internal.", "<Module>"};
    static const std::vector<std::string> none;
    switch (runtime) {
        case Martini::MPI::RT_JVM: return jvm;
        case Martini::MPI::RT_MONO: return mono;
        default: return none;
    }
}

struct Options {
    std::vector<std::string> includes, excludes;
    bool all = false;
    unsigned formats = kAllFormats;
    std::vector<std::string> sources;
    std::string outPath;
    std::size_t top = 20;

    static bool Starts(const std::string &s, const std::string &prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

    // Whether an include= names class `cls`.
    bool Includes(const std::string &cls) const {
        for (const auto &p : includes) {
            if (Starts(cls, p)) return true;
        }
        return false;
    }

    // Whether a method of class `cls` is covered.
    bool Wants(const std::string &cls, Martini::MPI::ERuntimeType runtime) const {
        for (const auto &p : excludes) {
            if (Starts(cls, p)) return false;
        }
        for (const auto &p : includes) {
            if (Starts(cls, p)) return true;
        }
        if (!includes.empty()) return false;
        if (all) return true;
        for (const auto &p : RuntimeLibrary(runtime)) {
            if (Starts(cls, p)) return false;
        }
        return true;
    }

    // `path` as found under the sources= directories (absolute), else as it is.
    std::string Resolve(const std::string &path) const {
        namespace fs = std::filesystem;
        std::error_code ec;
        if (!path.empty() && path[0] == '/') return path;
        for (const auto &dir : sources.empty() ? std::vector<std::string>{"."} : sources) {
            const fs::path candidate = fs::path(dir) / path;
            if (fs::is_regular_file(candidate, ec)) return fs::absolute(candidate, ec).lexically_normal().string();
        }
        return path;
    }
};

inline constexpr const char *kOptionNames[] = {"include", "exclude", "all", "formats", "sources", "out", "top"};

inline std::string ParseFormats(const std::string &value, unsigned &formats) {
    formats = 0;
    if (value == "none") return "";
    std::size_t start = 0;
    while (start <= value.size()) {
        std::size_t end = value.find('+', start);
        if (end == std::string::npos) end = value.size();
        const std::string f = value.substr(start, end - start);
        if (f == "lcov" || f == "info") formats |= kLcov;
        else if (f == "xml" || f == "cobertura") formats |= kCobertura;
        else if (f == "html") formats |= kHtml;
        else return "option 'formats': unknown format '" + f + "' (lcov, xml, html, joined by '+'; or none)";
        start = end + 1;
    }
    return "";
}

// Fills `o` from the option text; "" or the problem.
inline std::string ParseOptions(const char *text, Options &o) {
    std::vector<martini::clients::Option> items;
    if (std::string e = martini::clients::SplitOptions(text, items); !e.empty()) return e;
    for (const auto &it : items) {
        const std::string &key = it.key, &value = it.value;
        if (std::string e = martini::clients::CheckOptionName(key, kOptionNames); !e.empty()) return e;
        if (key == "all") {
            if (it.hasValue) return "option 'all' takes no value";
            o.all = true;
            continue;
        }
        if (value.empty()) return "option '" + key + "' needs a value";
        if (key == "include") {
            o.includes.push_back(value);
        } else if (key == "exclude") {
            o.excludes.push_back(value);
        } else if (key == "formats") {
            if (std::string e = ParseFormats(value, o.formats); !e.empty()) return e;
        } else if (key == "sources") {
            std::size_t start = 0;
            while (start <= value.size()) {
                std::size_t end = value.find(':', start);
                if (end == std::string::npos) end = value.size();
                if (end > start) o.sources.push_back(value.substr(start, end - start));
                start = end + 1;
            }
        } else if (key == "out") {
            o.outPath = value;
        } else if (key == "top") {
            char *end = nullptr;
            const unsigned long n = std::strtoul(value.c_str(), &end, 10);
            if (value[0] < '0' || value[0] > '9' || *end != '\0') return "option 'top': '" + value + "' is not a count";
            o.top = n;
        }
    }
    return "";
}

}  // namespace martini::coverage_client
