// Cobertura XML, the HTML page and the summary table of a coverage tracefile.
#include "martini/coverage/tracefile.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace martini::coverage {

namespace {

std::string Escape(const std::string &s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default:
                // XML 1.0 has no place for most control characters.
                if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += '?';
                else out += c;
        }
    }
    return out;
}

std::string Rate(double r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", r);
    return buf;
}

std::string Percent(std::size_t hit, std::size_t all) {
    if (all == 0) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * double(hit) / double(all));
    return buf;
}

std::string DirectoryOf(const std::string &path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? "" : path.substr(0, slash);
}

// The longest directory every path is in ("" when none is common).
std::string CommonDirectory(const Tracefile &t) {
    if (t.files.empty()) return "";
    std::string common = DirectoryOf(t.files.begin()->first);
    for (const auto &[path, f] : t.files) {
        while (!common.empty() && path.compare(0, common.size() + 1, common + "/") != 0) common = DirectoryOf(common);
    }
    return common;
}

// Per line of a file: its branch outcomes, hit and all.
std::map<unsigned, std::pair<std::size_t, std::size_t>> BranchesByLine(const File &f) {
    std::map<unsigned, std::pair<std::size_t, std::size_t>> out;
    for (const auto &[key, taken] : f.branches) {
        auto &[hit, all] = out[key.line];
        ++all;
        hit += taken.has_value() && *taken != 0;
    }
    return out;
}

// Files, least line coverage first (then by path).
std::vector<const std::pair<const std::string, File> *> ByCoverage(const Tracefile &t) {
    // Each file's rate once, not again in every comparison.
    std::vector<std::pair<double, const std::pair<const std::string, File> *>> rated;
    for (const auto &f : t.files) {
        const Totals c = Count(f.second);
        rated.emplace_back(Totals::Rate(c.linesHit, c.lines), &f);
    }
    std::stable_sort(rated.begin(), rated.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<const std::pair<const std::string, File> *> files;
    for (const auto &[rate, f] : rated) files.push_back(f);
    return files;
}

}  // namespace

void WriteCobertura(const Tracefile &t, std::ostream &out, std::int64_t timestampMs) {
    const Totals all = Count(t);
    const std::string root = CommonDirectory(t);
    auto relative = [&](const std::string &path) { return root.empty() ? path : path.substr(root.size() + 1); };
    out << "<?xml version=\"1.0\" ?>\n"
           "<!DOCTYPE coverage SYSTEM \"http://cobertura.sourceforge.net/xml/coverage-04.dtd\">\n"
        << "<coverage line-rate=\"" << Rate(Totals::Rate(all.linesHit, all.lines)) << "\" branch-rate=\""
        << Rate(Totals::Rate(all.branchesHit, all.branches)) << "\" lines-covered=\"" << all.linesHit
        << "\" lines-valid=\"" << all.lines << "\" branches-covered=\"" << all.branchesHit << "\" branches-valid=\""
        << all.branches << "\" complexity=\"0\" version=\"martini\" timestamp=\"" << timestampMs << "\">\n"
        << "  <sources>\n    <source>" << Escape(root.empty() ? "." : root) << "</source>\n  </sources>\n"
        << "  <packages>\n";
    std::map<std::string, std::vector<const std::pair<const std::string, File> *>> packages;
    for (const auto &f : t.files) packages[DirectoryOf(relative(f.first))].push_back(&f);
    for (const auto &[package, files] : packages) {
        Totals p;
        for (const auto *f : files) p.Add(Count(f->second));
        std::string name = package;
        std::replace(name.begin(), name.end(), '/', '.');
        out << "    <package name=\"" << Escape(name) << "\" line-rate=\"" << Rate(Totals::Rate(p.linesHit, p.lines))
            << "\" branch-rate=\"" << Rate(Totals::Rate(p.branchesHit, p.branches)) << "\" complexity=\"0\">\n"
            << "      <classes>\n";
        for (const auto *entry : files) {
            const File &f = entry->second;
            const Totals c = Count(f);
            const std::string file = relative(entry->first);
            std::string cls = file.substr(file.rfind('/') == std::string::npos ? 0 : file.rfind('/') + 1);
            cls = cls.substr(0, cls.rfind('.'));
            out << "        <class name=\"" << Escape(cls) << "\" filename=\"" << Escape(file) << "\" line-rate=\""
                << Rate(Totals::Rate(c.linesHit, c.lines)) << "\" branch-rate=\""
                << Rate(Totals::Rate(c.branchesHit, c.branches)) << "\" complexity=\"0\">\n          <methods>\n";
            for (const auto &[fname, fn] : f.functions) {
                out << "            <method name=\"" << Escape(fname) << "\" signature=\"\" line-rate=\""
                    << (fn.count != 0 ? "1" : "0") << "\" branch-rate=\"1\" complexity=\"0\">\n"
                    << "              <lines>\n                <line number=\"" << fn.line << "\" hits=\"" << fn.count
                    << "\" branch=\"false\"/>\n              </lines>\n            </method>\n";
            }
            out << "          </methods>\n          <lines>\n";
            const auto branches = BranchesByLine(f);
            for (const auto &[line, hits] : f.lines) {
                out << "            <line number=\"" << line << "\" hits=\"" << hits << "\"";
                const auto b = branches.find(line);
                if (b == branches.end()) {
                    out << " branch=\"false\"/>\n";
                } else {
                    out << " branch=\"true\" condition-coverage=\"" << Percent(b->second.first, b->second.second)
                        << " (" << b->second.first << "/" << b->second.second << ")\"/>\n";
                }
            }
            out << "          </lines>\n        </class>\n";
        }
        out << "      </classes>\n    </package>\n";
    }
    out << "  </packages>\n</coverage>\n";
}

void WriteHtml(const Tracefile &t, std::ostream &out, const SourceReader &read) {
    const Totals all = Count(t);
    out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Coverage</title>\n<style>\n"
           "body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}"
           "td,th{padding:2px 8px;text-align:right}td.f,th.f{text-align:left}"
           "pre{margin:0}.src{font-family:monospace;white-space:pre;border-collapse:collapse}"
           ".src td{padding:0 6px;text-align:left}.src td.n,.src td.c{text-align:right;color:#666}"
           ".hit{background:#dfd}.miss{background:#fcc}.part{background:#ffd}.note{color:#a40}\n"
           "</style></head><body>\n<h1>Coverage</h1>\n<p>Lines "
        << all.linesHit << " of " << all.lines << " (" << Percent(all.linesHit, all.lines) << "), functions "
        << all.functionsHit << " of " << all.functions << " (" << Percent(all.functionsHit, all.functions)
        << "), branches " << all.branchesHit << " of " << all.branches << " ("
        << Percent(all.branchesHit, all.branches) << ").</p>\n"
        << "<table><tr><th class=\"f\">file (least covered first)</th><th>lines</th><th>%</th><th>functions</th>"
           "<th>branches</th></tr>\n";
    const auto files = ByCoverage(t);
    for (std::size_t i = 0; i < files.size(); ++i) {
        const Totals c = Count(files[i]->second);
        out << "<tr><td class=\"f\"><a href=\"#f" << i << "\">" << Escape(files[i]->first) << "</a></td><td>"
            << c.linesHit << "/" << c.lines << "</td><td>" << Percent(c.linesHit, c.lines) << "</td><td>"
            << c.functionsHit << "/" << c.functions << "</td><td>" << c.branchesHit << "/" << c.branches
            << "</td></tr>\n";
    }
    out << "</table>\n";
    for (std::size_t i = 0; i < files.size(); ++i) {
        const std::string &path = files[i]->first;
        const File &f = files[i]->second;
        out << "<h2 id=\"f" << i << "\">" << Escape(path) << "</h2>\n";
        for (const auto &note : f.notes) out << "<p class=\"note\">" << Escape(note) << "</p>\n";
        const auto source = read(path);
        if (!source) {
            out << "<p class=\"note\">Source not found: " << Escape(path)
                << " (the coverage client's sources= option says where to look). Counted lines:</p>\n"
                   "<table class=\"src\">\n";
            for (const auto &[line, n] : f.lines) {
                out << "<tr class=\"" << (n ? "hit" : "miss") << "\"><td class=\"n\">" << line
                    << "</td><td class=\"c\">" << n << "</td></tr>\n";
            }
            out << "</table>\n";
            continue;
        }
        const auto branches = BranchesByLine(f);
        out << "<table class=\"src\">\n";
        for (std::size_t n = 1; n <= source->size(); ++n) {
            const auto line = f.lines.find(static_cast<unsigned>(n));
            const auto b = branches.find(static_cast<unsigned>(n));
            std::string cls, count;
            if (line != f.lines.end()) {
                cls = line->second == 0 ? "miss" : b != branches.end() && b->second.first < b->second.second ? "part" : "hit";
                count = std::to_string(line->second);
                if (b != branches.end()) {
                    count += " [" + std::to_string(b->second.first) + "/" + std::to_string(b->second.second) + "]";
                }
            }
            out << "<tr" << (cls.empty() ? "" : " class=\"" + cls + "\"") << "><td class=\"n\">" << n
                << "</td><td class=\"c\">" << count << "</td><td>" << Escape((*source)[n - 1]) << "</td></tr>\n";
        }
        out << "</table>\n";
    }
    out << "</body></html>\n";
}

void WriteSummary(const Tracefile &t, std::ostream &out, std::size_t maxFiles) {
    const Totals all = Count(t);
    char line[512];
    std::snprintf(line, sizeof line, "coverage: %zu files, lines %zu/%zu (%s), functions %zu/%zu (%s), branches %zu/%zu (%s)\n",
                  t.files.size(), all.linesHit, all.lines, Percent(all.linesHit, all.lines).c_str(), all.functionsHit,
                  all.functions, Percent(all.functionsHit, all.functions).c_str(), all.branchesHit, all.branches,
                  Percent(all.branchesHit, all.branches).c_str());
    out << line;
    if (maxFiles == 0 || t.files.empty()) return;
    std::snprintf(line, sizeof line, "%8s %11s %11s %11s  %s\n", "lines", "hit/all", "functions", "branches", "file");
    out << line;
    const auto files = ByCoverage(t);
    for (std::size_t i = 0; i < files.size() && i < maxFiles; ++i) {
        const Totals c = Count(files[i]->second);
        const std::string lines = std::to_string(c.linesHit) + "/" + std::to_string(c.lines);
        const std::string fns = std::to_string(c.functionsHit) + "/" + std::to_string(c.functions);
        const std::string brs = std::to_string(c.branchesHit) + "/" + std::to_string(c.branches);
        std::snprintf(line, sizeof line, "%8s %11s %11s %11s  %s\n", Percent(c.linesHit, c.lines).c_str(),
                      lines.c_str(), fns.c_str(), brs.c_str(), files[i]->first.c_str());
        out << line;
    }
    if (files.size() > maxFiles) out << "         (" << files.size() - maxFiles << " more files, best covered)\n";
}

}  // namespace martini::coverage
