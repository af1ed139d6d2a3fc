// The JSON profile format (docs/formats.md): writer and validating reader.
#include "martini/report/profile.h"

#include "text_out.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
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
    // The lines of the nodes' own samples, when any is known: [node, line, samples] rows.
    if (std::any_of(tree.nodes.begin(), tree.nodes.end(), [](const Node &n) { return !n.selfLines.empty(); })) {
        out << ",\"selfLines\":[";
        bool first = true;
        for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
            for (const auto &[line, samples] : tree.nodes[i].selfLines) {
                out << (first ? "[" : ",[") << std::uint64_t(i) << ',' << line << ',' << samples << ']';
                first = false;
            }
            out.MaybeFlush();
        }
        out << ']';
    }
    out << '}';
}

void FramesJson(detail::TextOut &out, const std::vector<Frame> &frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const Frame &f = frames[i];
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
}

// "spans" (when `withSpans`) and, beside them, "timeline".
void SpansAndTimelineJson(detail::TextOut &out, const Profile &p, bool withSpans) {
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
    out << ']';
    // The samples with their times (sampled profiles), beside the spans: [time, thread
    // index, node, line].
    if (withSpans && !p.timeline.empty()) {
        out << ",\"timeline\":[";
        for (std::size_t i = 0; i < p.timeline.size(); ++i) {
            const TimedSample &t = p.timeline[i];
            out << (i ? ",[" : "[") << t.timeNs << ',' << t.tree << ',' << t.node << ',' << t.line << ']';
            out.MaybeFlush();
        }
        out << ']';
    }
}

}  // namespace

// ---- reading ---------------------------------------------------------------------------
// Every problem of the input is thrown as Bad with a message naming the field, caught
// in ReadJson: nothing in a file, however broken, ends the program.
namespace {

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

// A value for a message: numbers and short strings as written, else what it is (never
// the whole of an array or object, which may be large or deeply nested).
std::string Shown(const json &v) {
    if (v.is_array()) return "an array";
    if (v.is_object()) return "an object";
    if (v.is_string() && v.get_ref<const std::string &>().size() > 40) return "a long string";
    return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A non-negative integer up to `max`; a float (1e30, 1.5), a negative number or
// anything else is named.
std::uint64_t Unsigned(const json &v, const std::string &where,
                       std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
    std::uint64_t value = 0;
    if (v.is_number_unsigned()) {
        value = v.get<std::uint64_t>();
    } else if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
        value = static_cast<std::uint64_t>(v.get<std::int64_t>());
    } else {
        throw Bad{where + ": expected a non-negative integer, not " + Shown(v)};
    }
    if (value > max) throw Bad{where + ": " + std::to_string(value) + " is out of range (at most " + std::to_string(max) + ")"};
    return value;
}

const json &Array(const json &v, const std::string &where) {
    if (!v.is_array()) throw Bad{where + ": expected an array"};
    return v;
}

// The nlohmann_json message without its "[json.exception.parse_error.101] " prefix.
std::string Plain(const json::exception &e) {
    const std::string what = e.what();
    const std::size_t end = what.find("] ");
    return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

// Parses the whole stream; "" or the problem.
std::string Parse(std::istream &in, json &j) {
    try {
        j = json::parse(in);
    } catch (const json::parse_error &e) {
        return "not JSON: " + Plain(e);
    } catch (const json::out_of_range &e) {
        // 406: a number beyond a double's range ("1e400"), valid JSON nonetheless.
        const std::string what = Plain(e);
        const std::string prefix = "number overflow parsing '";
        if (what.rfind(prefix, 0) == 0 && what.size() > prefix.size() + 1) {
            return "a number too large to read: " + what.substr(prefix.size(), what.size() - prefix.size() - 1);
        }
        return "cannot read the JSON: " + what;
    } catch (const json::exception &e) {
        return "cannot read the JSON: " + Plain(e);
    }
    return "";
}

Node ReadNode(const json &row, std::size_t i, const std::string &at, std::size_t metrics, std::size_t frames) {
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
    n.self.reserve(metrics);
    for (std::size_t k = 0; k < metrics; ++k) n.self.push_back(Unsigned(row[2 + k], at + " value " + std::to_string(k)));
    return n;
}

void ReadCallLines(const json &lines, const std::string &where, Tree &tree) {
    if (!lines.is_array() || lines.size() != tree.nodes.size()) {
        throw Bad{where + ".callLines: expected one line per node (" + std::to_string(tree.nodes.size()) + ")"};
    }
    for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
        tree.nodes[i].callLine = static_cast<std::uint32_t>(
            Unsigned(lines[i], where + ".callLines[" + std::to_string(i) + "]", 0xffffffffu));
    }
}

void ReadSelfLines(const json &rows, const std::string &where, Tree &tree) {
    if (!rows.is_array()) throw Bad{where + ".selfLines: expected an array of [node, line, samples]"};
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string at = where + ".selfLines[" + std::to_string(i) + "]";
        const json &r = rows[i];
        if (!r.is_array() || r.size() != 3) throw Bad{at + ": expected [node, line, samples]"};
        const std::uint64_t node = Unsigned(r[0], at + " node");
        if (node >= tree.nodes.size()) throw Bad{at + ": node " + std::to_string(node) + " is not in the tree"};
        const auto line = static_cast<std::uint32_t>(Unsigned(r[1], at + " line", 0xffffffffu));
        auto &lines = tree.nodes[node].selfLines;
        if (!lines.empty() && lines.back().first >= line) throw Bad{at + ": lines of a node must ascend"};
        lines.emplace_back(line, Unsigned(r[2], at + " samples"));
    }
}

Tree ReadTree(const json &j, const std::string &where, std::size_t metrics, std::size_t frames) {
    if (!j.is_object()) throw Bad{where + ": expected an object"};
    Tree tree;
    tree.threadId = Unsigned(Field(j, "id", where), where + ".id");
    tree.threadName = String(j, "name", where, false);
    const json &nodes = Field(j, "nodes", where);
    if (!nodes.is_array() || nodes.empty()) throw Bad{where + ".nodes: expected a non-empty array (the root first)"};
    if (nodes.size() > std::numeric_limits<std::uint32_t>::max()) throw Bad{where + ".nodes: too many nodes"};
    tree.nodes.reserve(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        tree.nodes.push_back(ReadNode(nodes[i], i, where + ".nodes[" + std::to_string(i) + "]", metrics, frames));
        if (i > 0) tree.nodes[tree.nodes.back().parent].children.push_back(static_cast<std::uint32_t>(i));
    }
    if (auto it = j.find("callLines"); it != j.end()) ReadCallLines(*it, where, tree);
    if (auto it = j.find("selfLines"); it != j.end()) ReadSelfLines(*it, where, tree);
    return tree;
}

// format, version, tool, runtime, mode, periodNs.
void ReadHeader(const json &j, Profile &p) {
    if (!j.is_object()) throw Bad{"expected a JSON object"};
    if (String(j, "format", "profile") != kFormatName) throw Bad{"\"format\" is not \"martini-profile\""};
    const json &version = Field(j, "version", "profile");
    if (version != kFormatVersion) {
        throw Bad{"profile format version " + Shown(version) + " (this Martini reads version " +
                  std::to_string(kFormatVersion) + ")"};
    }
    p.tool = String(j, "tool", "profile");
    p.runtime = String(j, "runtime", "profile", false);
    p.mode = String(j, "mode", "profile", false);
    if (auto it = j.find("periodNs"); it != j.end()) p.periodNs = Unsigned(*it, "periodNs");
}

// metrics and defaultMetric.
void ReadMetrics(const json &j, Profile &p) {
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
}

void ReadFrames(const json &j, Profile &p) {
    const json &frames = Array(Field(j, "frames", "profile"), "frames");
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const std::string at = "frames[" + std::to_string(i) + "]";
        const json &f = frames[i];
        if (!f.is_object()) throw Bad{at + ": expected an object"};
        Frame frame;
        frame.name = String(f, "name", at);
        frame.className = String(f, "class", at, false);
        frame.method = String(f, "method", at, false);
        frame.signature = String(f, "signature", at, false);
        frame.file = String(f, "file", at, false);
        if (auto it = f.find("line"); it != f.end()) {
            frame.line = static_cast<int>(Unsigned(*it, at + ".line", std::numeric_limits<int>::max()));
        }
        p.frames.push_back(std::move(frame));
    }
}

// threads, and merged (made from the threads when absent).
void ReadTrees(const json &j, Profile &p) {
    const json &threads = Array(Field(j, "threads", "profile"), "threads");
    for (std::size_t i = 0; i < threads.size(); ++i) {
        p.threads.push_back(ReadTree(threads[i], "threads[" + std::to_string(i) + "]", p.metrics.size(), p.frames.size()));
    }
    if (auto it = j.find("merged"); it != j.end()) {
        p.merged = ReadTree(*it, "merged", p.metrics.size(), p.frames.size());
    } else {
        p.Merge();
    }
}

void ReadSpans(const json &j, Profile &p) {
    auto it = j.find("spans");
    if (it == j.end()) return;
    const json &spans = Array(*it, "spans");
    for (std::size_t i = 0; i < spans.size(); ++i) {
        const std::string at = "spans[" + std::to_string(i) + "]";
        const json &s = spans[i];
        if (!s.is_array() || s.size() != 5 || !s[4].is_string()) {
            throw Bad{at + ": expected [thread, frame, start ns, duration ns, category]"};
        }
        Span span{Unsigned(s[0], at + " thread"), 0, Unsigned(s[2], at + " start"), Unsigned(s[3], at + " duration"),
                  s[4].get<std::string>()};
        const std::uint64_t frame = Unsigned(s[1], at + " frame");
        if (frame >= p.frames.size()) throw Bad{at + ": frame " + std::to_string(frame) + " is not in \"frames\""};
        span.frame = static_cast<std::uint32_t>(frame);
        p.spans.push_back(std::move(span));
    }
}

void ReadTimeline(const json &j, Profile &p) {
    auto it = j.find("timeline");
    if (it == j.end()) return;
    const json &samples = Array(*it, "timeline");
    p.timeline.reserve(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const std::string at = "timeline[" + std::to_string(i) + "]";
        const json &s = samples[i];
        if (!s.is_array() || s.size() != 4) throw Bad{at + ": expected [time ns, thread index, node, line]"};
        TimedSample t;
        t.timeNs = Unsigned(s[0], at + " time");
        const std::uint64_t tree = Unsigned(s[1], at + " thread index");
        if (tree >= p.threads.size()) throw Bad{at + ": thread index " + std::to_string(tree) + " is not in \"threads\""};
        const std::uint64_t node = Unsigned(s[2], at + " node");
        if (node >= p.threads[tree].nodes.size()) throw Bad{at + ": node " + std::to_string(node) + " is not in its thread's tree"};
        t.tree = static_cast<std::uint32_t>(tree);
        t.node = static_cast<std::uint32_t>(node);
        t.line = static_cast<std::uint32_t>(Unsigned(s[3], at + " line", 0xffffffffu));
        p.timeline.push_back(t);
    }
}

void ReadThreadNames(const json &j, Profile &p) {
    auto it = j.find("threadNames");
    if (it == j.end()) return;
    const json &names = Array(*it, "threadNames");
    for (std::size_t i = 0; i < names.size(); ++i) {
        const std::string at = "threadNames[" + std::to_string(i) + "]";
        if (!names[i].is_object()) throw Bad{at + ": expected an object"};
        p.threadNames.push_back({Unsigned(Field(names[i], "id", at), at + ".id"), String(names[i], "name", at, false)});
    }
}

void ReadCounters(const json &j, Profile &p) {
    auto it = j.find("counters");
    if (it == j.end()) return;
    if (!it->is_object()) throw Bad{"counters: expected an object"};
    for (auto c = it->begin(); c != it->end(); ++c) p.counters.emplace_back(c.key(), Unsigned(c.value(), "counters." + c.key()));
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
    FramesJson(out, p.frames);
    out << "],\"threads\":[";
    for (std::size_t i = 0; i < p.threads.size(); ++i) {
        if (i) out << ',';
        TreeJson(out, p.threads[i], p.ThreadName(p.threads[i].threadId));
    }
    out << "],\"merged\":";
    TreeJson(out, p.merged, p.merged.threadName);
    SpansAndTimelineJson(out, p, withSpans);
    out << ",\"threadNames\":[";
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
    if (std::string e = Parse(in, j); !e.empty()) return e;
    try {
        Profile read;
        ReadHeader(j, read);
        ReadMetrics(j, read);
        ReadFrames(j, read);
        ReadTrees(j, read);
        ReadSpans(j, read);
        ReadTimeline(j, read);
        ReadThreadNames(j, read);
        ReadCounters(j, read);
        read.NameThreads();
        p = std::move(read);
    } catch (const Bad &bad) {
        return bad.message;
    } catch (const json::exception &e) {  // a check missed above: still a message, never an abort
        return Plain(e);
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
