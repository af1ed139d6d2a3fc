// lcov tracefiles: writing, reading, merging; totals.
#include "martini/coverage/tracefile.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <istream>
#include <ostream>
#include <sstream>

namespace martini::coverage {

void Totals::Add(const Totals &o) {
    lines += o.lines;
    linesHit += o.linesHit;
    functions += o.functions;
    functionsHit += o.functionsHit;
    branches += o.branches;
    branchesHit += o.branchesHit;
}

Totals Count(const File &f) {
    Totals t;
    t.lines = f.lines.size();
    for (const auto &[line, n] : f.lines) t.linesHit += n != 0;
    t.functions = f.functions.size();
    for (const auto &[name, fn] : f.functions) t.functionsHit += fn.count != 0;
    t.branches = f.branches.size();
    for (const auto &[key, n] : f.branches) t.branchesHit += n.has_value() && *n != 0;
    return t;
}

Totals Count(const Tracefile &t) {
    Totals all;
    for (const auto &[path, f] : t.files) all.Add(Count(f));
    return all;
}

void WriteLcov(const Tracefile &t, std::ostream &out) {
    for (const auto &[path, f] : t.files) {
        out << "TN:" << t.testName << "\nSF:" << path << '\n';
        // Functions in line order, as geninfo writes them.
        std::multimap<unsigned, const std::pair<const std::string, Function> *> byLine;
        for (const auto &fn : f.functions) byLine.emplace(fn.second.line, &fn);
        for (const auto &[line, fn] : byLine) out << "FN:" << line << ',' << fn->first << '\n';
        for (const auto &[line, fn] : byLine) out << "FNDA:" << fn->second.count << ',' << fn->first << '\n';
        const Totals n = Count(f);
        out << "FNF:" << n.functions << "\nFNH:" << n.functionsHit << '\n';
        for (const auto &[key, taken] : f.branches) {
            out << "BRDA:" << key.line << ',' << key.block << ',' << key.branch << ',';
            if (taken) out << *taken; else out << '-';
            out << '\n';
        }
        out << "BRF:" << n.branches << "\nBRH:" << n.branchesHit << '\n';
        for (const auto &[line, count] : f.lines) out << "DA:" << line << ',' << count << '\n';
        out << "LF:" << n.lines << "\nLH:" << n.linesHit << "\nend_of_record\n";
    }
}

namespace {

bool ToNumber(std::string_view s, std::uint64_t &v) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size();
}

// Splits "a,b,c" into at most `n` fields (the last keeps any further commas).
std::vector<std::string_view> Fields(std::string_view s, std::size_t n) {
    std::vector<std::string_view> out;
    while (out.size() + 1 < n) {
        const auto comma = s.find(',');
        if (comma == std::string_view::npos) break;
        out.push_back(s.substr(0, comma));
        s.remove_prefix(comma + 1);
    }
    out.push_back(s);
    return out;
}

}  // namespace

std::string ReadLcov(std::istream &in, const std::string &name, Tracefile &t) {
    std::string text;
    std::size_t number = 0;
    File *file = nullptr;
    std::map<std::string, Function> *functions = nullptr;
    auto bad = [&](const std::string &why) {
        return name + ":" + std::to_string(number) + ": " + why + " (not an lcov tracefile line: '" + text + "')";
    };
    while (std::getline(in, text)) {
        ++number;
        if (!text.empty() && text.back() == '\r') text.pop_back();
        if (text.empty()) continue;
        const auto colon = text.find(':');
        const std::string key = text.substr(0, colon);
        const std::string_view value = colon == std::string::npos ? std::string_view() : std::string_view(text).substr(colon + 1);
        if (key == "TN") {
            t.testName = std::string(value);
            continue;
        }
        if (key == "SF") {
            if (value.empty()) return bad("SF without a path");
            file = &t.files[std::string(value)];
            functions = &file->functions;
            continue;
        }
        if (key == "end_of_record") {
            file = nullptr;
            continue;
        }
        if (file == nullptr) return bad("a record line outside SF ... end_of_record");
        std::uint64_t a = 0, b = 0, c = 0, d = 0;
        if (key == "FN") {
            // FN:<line>,<name>; lcov 2 writes FN:<line>,<end line>,<name>.
            auto f = Fields(value, 2);
            if (f.size() != 2 || !ToNumber(f[0], a) || f[1].empty()) return bad("expected FN:<line>,<name>");
            if (const auto three = Fields(value, 3); three.size() == 3 && ToNumber(three[1], b) && !three[2].empty()) {
                f[1] = three[2];
            }
            (*functions)[std::string(f[1])].line = static_cast<unsigned>(a);
        } else if (key == "FNDA") {
            const auto f = Fields(value, 2);
            if (f.size() != 2 || !ToNumber(f[0], a) || f[1].empty()) return bad("expected FNDA:<count>,<name>");
            (*functions)[std::string(f[1])].count += a;
        } else if (key == "BRDA") {
            const auto f = Fields(value, 4);
            if (f.size() != 4 || !ToNumber(f[0], a) || !ToNumber(f[1], b) || !ToNumber(f[2], c) ||
                (f[3] != "-" && !ToNumber(f[3], d))) {
                return bad("expected BRDA:<line>,<block>,<branch>,<taken or ->");
            }
            auto &taken = file->branches[{unsigned(a), unsigned(b), unsigned(c)}];
            if (f[3] != "-") taken = taken.value_or(0) + d;
        } else if (key == "DA") {
            const auto f = Fields(value, 3);  // DA:<line>,<count>[,<checksum>]
            if (f.size() < 2 || !ToNumber(f[0], a) || !ToNumber(f[1], b)) return bad("expected DA:<line>,<count>");
            file->lines[unsigned(a)] += b;
        } else if (key == "FNF" || key == "FNH" || key == "BRF" || key == "BRH" || key == "LF" || key == "LH") {
            if (!ToNumber(value, a)) return bad("expected " + key + ":<count>");
        } else {
            return bad("unknown record '" + key + "'");
        }
    }
    if (file != nullptr) {
        return name + ":" + std::to_string(number + 1) + ": the last record has no end_of_record: the file is cut short";
    }
    return "";
}

std::string Merge(Tracefile &into, const Tracefile &from, const std::string &fromName) {
    // Checked whole before anything is added: a refused file changes nothing.
    for (const auto &[path, f] : from.files) {
        const auto have = into.files.find(path);
        if (have == into.files.end()) continue;
        for (const auto &[name, fn] : f.functions) {
            const auto other = have->second.functions.find(name);
            if (other != have->second.functions.end() && other->second.line != fn.line) {
                return fromName + ": " + path + ": function " + name + " starts on line " +
                       std::to_string(fn.line) + ", on line " + std::to_string(other->second.line) +
                       " in the files before it: they were made from different sources and cannot be merged";
            }
        }
    }
    for (const auto &[path, f] : from.files) {
        File &to = into.files[path];
        for (const auto &[line, n] : f.lines) to.lines[line] += n;
        for (const auto &[name, fn] : f.functions) {
            Function &g = to.functions[name];
            g.line = fn.line;
            g.count += fn.count;
        }
        for (const auto &[key, n] : f.branches) {
            auto &taken = to.branches[key];
            if (n) taken = taken.value_or(0) + *n;
        }
        for (const auto &note : f.notes) {
            if (std::find(to.notes.begin(), to.notes.end(), note) == to.notes.end()) to.notes.push_back(note);
        }
    }
    return "";
}

std::optional<std::vector<std::string>> ReadSourceFile(const std::string &path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
    if (in.bad()) return std::nullopt;
    return lines;
}

}  // namespace martini::coverage
