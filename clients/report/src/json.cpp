// The JSON profile format (docs/formats.md): writer and validating reader.
#include "martini/report/profile.h"

#include "text_out.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <istream>
#include <ostream>

namespace martini::report {

namespace {

using nlohmann::json;

constexpr const char *kFormatName = "martini-profile";
constexpr int kFormatVersion = 1;

void TreeJson(detail::TextOut &out, const Tree &tree, const std::string &name) {
    out << "{\"id\":" << tree.threadId << ",\"name\":";
    out.Json(name);
    out << ",\"nodes\":[";
    for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
        const Node &n = tree.nodes[i];
        if (i != 0) out << ',';
        out << '[';
        if (n.parent == kNoParent) out << "-1";
        else out << n.parent;
        out << ',';
        if (n.frame == kRootFrame) out << "-1";
        else out << n.frame;
        for (std::uint64_t v : n.self) out << ',' << v;
        out << ']';
        out.MaybeFlush();
    }
    out << ']';
    // Call-site lines, one per node (the root's 0), when any is known.
    if (std::any_of(tree.nodes.begin(), tree.nodes.end(), [](const Node &n) { return n.callLine != 0; })) {
        out << ",\"callLines\":[";
        for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
            if (i != 0) out << ',';
            out << tree.nodes[i].callLine;
            out.MaybeFlush();
        }
        out << ']';
    }
    out << '}';
}

// Reader helpers: each failure names the field.
struct Bad {
    std::string message;
};

const json &Field(const json &obj, const char *name, const std::string &where) {
    auto it = obj.find(name);
    if (it == obj.end()) throw Bad{where + ": missing field \"" + name + "\""};
    return *it;
}

std::string String(const json &obj, const char *name, const std::string &where, bool required = true) {
    auto it = obj.find(name);
    if (it == obj.end()) {
        if (required) throw Bad{where + ": missing field \"" + name + "\""};
        return "";
    }
    if (!it->is_string()) throw Bad{where + "." + name + ": expected a string"};
    return it->get<std::string>();
}

std::uint64_t Unsigned(const json &v, const std::string &where) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
        throw Bad{where + ": expected a non-negative integer"};
    }
    return v.get<std::uint64_t>();
}

Tree ReadTree(const json &j, const std::string &where, std::size_t metrics, std::size_t frames) {
    if (!j.is_object()) throw Bad{where + ": expected an object"};
    Tree tree;
    tree.threadId = Unsigned(Field(j, "id", where), where + ".id");
    tree.threadName = String(j, "name", where, false);
    const json &nodes = Field(j, "nodes", where);
    if (!nodes.is_array() || nodes.empty()) throw Bad{where + ".nodes: expected a non-empty array (the root first)"};
    tree.nodes.reserve(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const std::string at = where + ".nodes[" + std::to_string(i) + "]";
        const json &row = nodes[i];
        if (!row.is_array() || row.size() != 2 + metrics) {
            throw Bad{at + ": expected [parent, frame, " + std::to_string(metrics) + " metric values]"};
        }
        Node n;
        if (i == 0) {
            if (row[0] != -1 || row[1] != -1) throw Bad{at + ": the root must be [-1, -1, ...]"};
        } else {
            const std::uint64_t parent = Unsigned(row[0], at + " parent");
            const std::uint64_t frame = Unsigned(row[1], at + " frame");
            if (parent >= i) throw Bad{at + ": parent " + std::to_string(parent) + " is not an earlier node"};
            if (frame >= frames) throw Bad{at + ": frame " + std::to_string(frame) + " is not in \"frames\""};
            n.parent = static_cast<std::uint32_t>(parent);
            n.frame = static_cast<std::uint32_t>(frame);
        }
        for (std::size_t k = 0; k < metrics; ++k) n.self.push_back(Unsigned(row[2 + k], at + " value " + std::to_string(k)));
        tree.nodes.push_back(std::move(n));
        if (i > 0) tree.nodes[tree.nodes.back().parent].children.push_back(static_cast<std::uint32_t>(i));
    }
    if (auto it = j.find("callLines"); it != j.end()) {
        if (!it->is_array() || it->size() != tree.nodes.size()) {
            throw Bad{where + ".callLines: expected one line per node (" + std::to_string(tree.nodes.size()) + ")"};
        }
        for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
            const std::uint64_t line = Unsigned((*it)[i], where + ".callLines[" + std::to_string(i) + "]");
            if (line > 0xffffffffu) throw Bad{where + ".callLines[" + std::to_string(i) + "]: not a line number"};
            tree.nodes[i].callLine = static_cast<std::uint32_t>(line);
        }
    }
    return tree;
}

}  // namespace

void WriteJson(const Profile &p, std::ostream &stream, bool withSpans) {
    // Streamed, not built as a DOM: the trees are most of the file.
    detail::TextOut out(stream);
    out << "{\"format\":";
    out.Json(kFormatName);
    out << ",\"version\":" << kFormatVersion << ",\"tool\":";
    out.Json(p.tool);
    out << ",\"runtime\":";
    out.Json(p.runtime);
    out << ",\"mode\":";
    out.Json(p.mode);
    if (p.periodNs != 0) out << ",\"periodNs\":" << p.periodNs;
    out << ",\"metrics\":[";
    for (std::size_t i = 0; i < p.metrics.size(); ++i) {
        out << (i ? ",{\"name\":" : "{\"name\":");
        out.Json(p.metrics[i].name);
        out << ",\"unit\":";
        out.Json(p.metrics[i].unit);
        out << '}';
    }
    out << "],\"defaultMetric\":";
    out.Json(p.defaultMetric < p.metrics.size() ? p.metrics[p.defaultMetric].name : "");
    out << ",\"frames\":[";
    for (std::size_t i = 0; i < p.frames.size(); ++i) {
        const Frame &f = p.frames[i];
        out << (i ? ",{\"name\":" : "{\"name\":");
        out.Json(f.name);
        auto field = [&](const char *key, const std::string &value) {
            if (value.empty()) return;
            out << ",\"" << key << "\":";
            out.Json(value);
        };
        field("class", f.className);
        field("method", f.method);
        field("signature", f.signature);
        field("file", f.file);
        if (f.line != 0) out << ",\"line\":" << f.line;
        out << '}';
    }
    out << "],\"threads\":[";
    for (std::size_t i = 0; i < p.threads.size(); ++i) {
        if (i) out << ',';
        TreeJson(out, p.threads[i], p.ThreadName(p.threads[i].threadId));
    }
    out << "],\"merged\":";
    TreeJson(out, p.merged, p.merged.threadName);
    out << ",\"spans\":[";
    if (withSpans) {
        for (std::size_t i = 0; i < p.spans.size(); ++i) {
            const Span &s = p.spans[i];
            out << (i ? ",[" : "[") << s.threadId << ',' << s.frame << ',' << s.startNs << ',' << s.durationNs << ',';
            out.Json(s.category);
            out << ']';
            out.MaybeFlush();
        }
    }
    out << "],\"threadNames\":[";
    for (std::size_t i = 0; i < p.threadNames.size(); ++i) {
        out << (i ? ",{\"id\":" : "{\"id\":") << p.threadNames[i].id << ",\"name\":";
        out.Json(p.threadNames[i].name.empty() ? UnnamedThreadName(p.threadNames[i].id) : p.threadNames[i].name);
        out << '}';
    }
    out << "],\"counters\":{";
    for (std::size_t i = 0; i < p.counters.size(); ++i) {
        if (i) out << ',';
        out.Json(p.counters[i].first);
        out << ':' << p.counters[i].second;
    }
    out << "}}\n";
}

std::string ReadJson(std::istream &in, Profile &p) {
    json j;
    try {
        j = json::parse(in);
    } catch (const json::parse_error &e) {
        return std::string("not JSON: ") + e.what();
    }
    try {
        if (!j.is_object()) throw Bad{"expected a JSON object"};
        if (String(j, "format", "profile") != kFormatName) throw Bad{"\"format\" is not \"martini-profile\""};
        const json &version = Field(j, "version", "profile");
        if (version != kFormatVersion) {
            throw Bad{"profile format version " + version.dump() + " (this Martini reads version " +
                      std::to_string(kFormatVersion) + ")"};
        }
        p = Profile{};
        p.tool = String(j, "tool", "profile");
        p.runtime = String(j, "runtime", "profile", false);
        p.mode = String(j, "mode", "profile", false);
        if (auto it = j.find("periodNs"); it != j.end()) p.periodNs = Unsigned(*it, "periodNs");
        const json &metrics = Field(j, "metrics", "profile");
        if (!metrics.is_array() || metrics.empty()) throw Bad{"metrics: expected a non-empty array"};
        for (std::size_t i = 0; i < metrics.size(); ++i) {
            const std::string at = "metrics[" + std::to_string(i) + "]";
            if (!metrics[i].is_object()) throw Bad{at + ": expected an object"};
            p.metrics.push_back({String(metrics[i], "name", at), String(metrics[i], "unit", at)});
        }
        const std::string def = String(j, "defaultMetric", "profile", false);
        const int defIndex = def.empty() ? 0 : p.MetricIndex(def);
        if (defIndex < 0) throw Bad{"defaultMetric \"" + def + "\" is not in \"metrics\""};
        p.defaultMetric = static_cast<std::size_t>(defIndex);
        const json &frames = Field(j, "frames", "profile");
        if (!frames.is_array()) throw Bad{"frames: expected an array"};
        for (std::size_t i = 0; i < frames.size(); ++i) {
            const std::string at = "frames[" + std::to_string(i) + "]";
            if (!frames[i].is_object()) throw Bad{at + ": expected an object"};
            Frame f;
            f.name = String(frames[i], "name", at);
            f.className = String(frames[i], "class", at, false);
            f.method = String(frames[i], "method", at, false);
            f.signature = String(frames[i], "signature", at, false);
            f.file = String(frames[i], "file", at, false);
            if (auto it = frames[i].find("line"); it != frames[i].end()) f.line = static_cast<int>(Unsigned(*it, at + ".line"));
            p.frames.push_back(std::move(f));
        }
        const json &threads = Field(j, "threads", "profile");
        if (!threads.is_array()) throw Bad{"threads: expected an array"};
        for (std::size_t i = 0; i < threads.size(); ++i) {
            p.threads.push_back(ReadTree(threads[i], "threads[" + std::to_string(i) + "]", p.metrics.size(), p.frames.size()));
        }
        if (auto it = j.find("merged"); it != j.end()) {
            p.merged = ReadTree(*it, "merged", p.metrics.size(), p.frames.size());
        } else {
            p.Merge();
        }
        if (auto it = j.find("spans"); it != j.end()) {
            if (!it->is_array()) throw Bad{"spans: expected an array"};
            for (std::size_t i = 0; i < it->size(); ++i) {
                const std::string at = "spans[" + std::to_string(i) + "]";
                const json &s = (*it)[i];
                if (!s.is_array() || s.size() != 5 || !s[4].is_string()) {
                    throw Bad{at + ": expected [thread, frame, start ns, duration ns, category]"};
                }
                Span span{Unsigned(s[0], at), static_cast<std::uint32_t>(Unsigned(s[1], at)), Unsigned(s[2], at),
                          Unsigned(s[3], at), s[4].get<std::string>()};
                if (span.frame >= p.frames.size()) throw Bad{at + ": frame is not in \"frames\""};
                p.spans.push_back(std::move(span));
            }
        }
        if (auto it = j.find("threadNames"); it != j.end() && it->is_array()) {
            for (const json &t : *it) {
                if (t.is_object()) p.threadNames.push_back({Unsigned(Field(t, "id", "threadNames"), "threadNames.id"), String(t, "name", "threadNames", false)});
            }
        }
        if (auto it = j.find("counters"); it != j.end()) {
            if (!it->is_object()) throw Bad{"counters: expected an object"};
            for (auto c = it->begin(); c != it->end(); ++c) p.counters.emplace_back(c.key(), Unsigned(c.value(), "counters." + c.key()));
        }
        p.NameThreads();
    } catch (const Bad &bad) {
        return bad.message;
    } catch (const json::exception &e) {
        return e.what();
    }
    return "";
}

std::string ReadJsonFile(const std::string &path, Profile &profile) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "cannot read '" + path + "': " + std::strerror(errno);
    const std::string error = ReadJson(in, profile);
    return error.empty() ? "" : "'" + path + "' is not a Martini profile: " + error;
}

}  // namespace martini::report
