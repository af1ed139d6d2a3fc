// Chrome trace event JSON (the "JSON Array/Object Format" Perfetto UI and
// chrome://tracing open): complete ("X") events per recorded span, thread names as
// metadata ("M") events. Streamed (a trace holds up to millions of events).
#include "martini/report/profile.h"

#include "text_out.h"

#include <algorithm>
#include <ostream>
#include <set>

namespace martini::report {

namespace {

using detail::TextOut;

double Micros(std::uint64_t ns) { return double(ns) / 1000.0; }

void ThreadMetadata(TextOut &out, std::uint64_t tid, const std::string &name) {
    out << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << tid << ",\"name\":\"thread_name\",\"args\":{\"name\":";
    out.Json(name);
    out << "}}";
}

// {"ph":"X",...,"args":{"signature":...,"file":... <extra>}} without the closing braces.
void Slice(TextOut &out, std::uint64_t tid, const Frame &f, const std::string &category, std::uint64_t startNs,
           std::uint64_t durationNs) {
    out << ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":" << tid << ",\"name\":";
    out.Json(f.name);
    out << ",\"cat\":";
    out.Json(category);
    out << ",\"ts\":" << Micros(startNs) << ",\"dur\":" << Micros(durationNs) << ",\"args\":{";
    bool first = true;
    if (!f.signature.empty()) {
        out << "\"signature\":";
        out.Json(f.signature);
        first = false;
    }
    if (!f.file.empty()) {
        out << (first ? "\"file\":" : ",\"file\":");
        out.Json(f.file);
        first = false;
    }
    if (f.line != 0) out << (first ? "\"line\":" : ",\"line\":") << f.line;
}

std::uint64_t Counter(const Profile &p, const std::string &name) {
    for (const auto &[key, value] : p.counters) {
        if (key == name) return value;
    }
    return 0;
}

}  // namespace

std::string TraceCutNote(const Profile &p) {
    const std::uint64_t notKept = Counter(p, kTraceCallsNotKept);
    if (notKept == 0) return "";
    const std::uint64_t kept = p.spans.size();
    return "trace cut after " + std::to_string(kept) + " calls (" + std::to_string(notKept) +
           " later calls not kept; every call entered within the budget is whole): use trace=" +
           std::to_string(kept + notKept) + " to keep them all";
}

void WriteChromeTrace(const Profile &p, std::ostream &stream) {
    TextOut out(stream);
    out << "{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":";
    out.Json(p.runtime.empty() ? p.tool : p.runtime);
    out << "}}";
    const std::string cut = TraceCutNote(p);
    std::string widths;
    // Without recorded spans, a sampled profile's timeline: its samples over time.
    const std::vector<Span> sampled = p.spans.empty() ? TimelineSpans(p) : std::vector<Span>{};
    const std::vector<Span> &spans = p.spans.empty() ? sampled : p.spans;
    if (!spans.empty()) {
        std::set<std::uint64_t> tids;
        std::uint64_t first = spans[0].startNs;
        for (const Span &s : spans) {
            tids.insert(s.threadId);
            first = std::min(first, s.startNs);
        }
        for (std::uint64_t tid : tids) ThreadMetadata(out, tid, p.ThreadName(tid));
        if (!cut.empty()) {
            // Where the trace starts, on every track: the reader sees it was cut.
            out << ",\n{\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":" << spans[0].threadId << ",\"name\":";
            out.Json(cut);
            out << ",\"cat\":\"martini\",\"ts\":" << Micros(first) << "}";
        }
        for (const Span &s : spans) {
            Slice(out, s.threadId, p.frames[s.frame], s.category, s.startNs, s.durationNs);
            out << "}}";
            out.MaybeFlush();
        }
    } else {
        // No recorded spans: each thread's tree as a flame chart, children side by side
        // inside their parent, widths from the default metric.
        const std::size_t metric = p.defaultMetric;
        const bool isTime = metric < p.metrics.size() && p.metrics[metric].unit == "nanoseconds";
        for (const Tree &t : p.threads) {
            if (t.nodes.empty()) continue;
            ThreadMetadata(out, t.threadId, p.ThreadName(t.threadId));
            const auto totals = Totals(t, p.metrics.size());
            // Widths in ns; counts and bytes shown as 1 us per unit.
            auto width = [&](std::uint32_t n) { return metric < p.metrics.size() ? totals[n][metric] * (isTime ? 1 : 1000) : 0; };
            std::vector<std::pair<std::uint32_t, std::uint64_t>> work;  // node, start
            std::uint64_t start = 0;
            for (std::uint32_t c : t.nodes[0].children) {
                work.emplace_back(c, start);
                start += width(c);
            }
            while (!work.empty()) {
                const auto [n, s] = work.back();
                work.pop_back();
                const Node &node = t.nodes[n];
                const Frame &f = p.frames[node.frame];
                Slice(out, t.threadId, f, "tree", s, width(n));
                const bool emptyArgs = f.signature.empty() && f.file.empty() && f.line == 0;
                for (std::size_t k = 0; k < p.metrics.size(); ++k) {
                    out << (k == 0 && emptyArgs ? "" : ",");
                    out.Json(p.metrics[k].name);
                    out << ':' << totals[n][k];
                }
                out << "}}";
                out.MaybeFlush();
                std::uint64_t childStart = s;
                for (std::uint32_t c : node.children) {
                    work.emplace_back(c, childStart);
                    childStart += width(c);
                }
            }
        }
        if (metric < p.metrics.size()) widths = p.metrics[metric].name + (isTime ? "" : " (1 us per unit)");
    }
    out << "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":";
    out.Json(p.tool);
    out << ",\"runtime\":";
    out.Json(p.runtime);
    out << ",\"mode\":";
    out.Json(p.mode);
    out << ",\"synthesized\":" << (spans.empty() ? "true" : "false");
    if (!widths.empty()) {
        out << ",\"widths\":";
        out.Json(widths);
    }
    if (!cut.empty()) {
        out << ",\"cut\":";
        out.Json(cut);
    }
    out << "}}\n";
}

}  // namespace martini::report
