// The profile model shared by Martini's clients and the `martini` command, and the
// writers and reader of its formats (docs/formats.md).
//
// A profile is a set of calling-context trees (one per runtime thread, and their
// merge) over a table of frames, with one or more metrics per node. Every metric is
// stored as the node's *self* value (what happened in exactly this context); totals
// (inclusive values) are the sums over subtrees, so they are never double-counted
// under recursion. cgprof's metrics are calls, wall and cpu time; heapprof's are
// allocated objects and bytes.
//
// Nothing here is on an event path: clients build their own per-thread structures
// while the program runs and convert them into a Profile once, at the end.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace martini::report {

inline constexpr std::uint32_t kNoParent = 0xffffffffu;
inline constexpr std::uint32_t kRootFrame = 0xffffffffu;

struct Metric {
    std::string name;  // "calls", "wall", "cpu", "alloc_objects", "alloc_space", ...
    std::string unit;  // "count", "nanoseconds", "bytes"
};

struct Frame {
    std::string name;       // what people read: "shop.Cart.add"
    std::string className;  // "shop.Cart" ("" when unknown)
    std::string method;     // "add"
    std::string signature;  // "(I)V"
    std::string file;       // "Cart.java"
    int line = 0;           // first line of the method (lowest line of its line table), 0 when unknown
};

// The readable parameter list of a JVM method descriptor: "(ILjava/lang/String;)V"
// -> "(int,String)" (simple class names, "[]" for arrays). Any other signature is
// returned as it is.
std::string ReadableParameters(const std::string &signature);

// Tells overloads apart: every frame whose name another frame with a different
// signature shares gets its readable parameter list appended, e.g.
// "shop.Shop.place(int)" and "shop.Shop.place(String,int)" (a signature that is no
// JVM descriptor is appended in brackets: "f[lua:12]"); names still shared then get
// ":" and the return type (bridge methods). Frames without a signature, and names
// held by one signature only, are left alone.
void NameOverloads(std::vector<Frame> &frames);

// The one name of a thread the runtime did not name: "thread 6" (JSON, tables,
// Chrome trace, pprof labels, HTML).
std::string UnnamedThreadName(std::uint64_t threadId);

struct Node {
    std::uint32_t frame = kRootFrame;  // index into Profile::frames; kRootFrame for the root
    std::uint32_t parent = kNoParent;  // index of the parent node; kNoParent for the root
    std::vector<std::uint64_t> self;   // one value per metric
    std::vector<std::uint32_t> children;
    // The line in the parent frame's method at which this frame is called (the call
    // site; the first one seen when there are several), 0 when unknown.
    std::uint32_t callLine = 0;
    // Sampled profiles: the lines of this frame's method at which the node's own
    // samples fell, as (line, samples), ascending by line; empty when no line is known.
    std::vector<std::pair<std::uint32_t, std::uint64_t>> selfLines;
};

// One calling-context tree. nodes[0] is the root (no frame); a parent always comes
// before its children.
struct Tree {
    std::uint64_t threadId = 0;  // 0 for the merged tree
    std::string threadName;
    std::vector<Node> nodes;

    // Adds a node under `parent` and returns its index (does not look for an existing
    // child: see ChildOf).
    std::uint32_t Add(std::uint32_t parent, std::uint32_t frame, std::size_t metrics);
    // The child of `parent` for `frame`, created when missing (linear in the children).
    std::uint32_t ChildOf(std::uint32_t parent, std::uint32_t frame, std::size_t metrics);
    void Clear(std::size_t metrics);  // just a root
};

// A timed call for the Chrome trace: one complete ("X") event.
struct Span {
    std::uint64_t threadId = 0;
    std::uint32_t frame = 0;
    std::uint64_t startNs = 0;
    std::uint64_t durationNs = 0;
    std::string category;  // "call", "contention", "wait", ...
};

// One sample and its time (sampled profiles): the tree of its thread, the node it was
// counted in (its innermost frame's path) and the line in that frame (0: unknown).
struct TimedSample {
    std::uint64_t timeNs = 0;  // the runtime's monotonic clock
    std::uint32_t tree = 0;    // index into Profile::threads
    std::uint32_t node = 0;
    std::uint32_t line = 0;
};

struct ThreadInfo {
    std::uint64_t id = 0;
    std::string name;
};

struct Profile {
    std::string tool;     // "cgprof"
    std::string runtime;  // "OpenJDK 64-Bit Server VM 17.0.15", "replay"
    std::string mode;     // the tool's mode: "counts", "time", "exact", "sampled"
    std::vector<Metric> metrics;
    std::size_t defaultMetric = 0;  // the one flame graphs and collapsed stacks show
    // Sampled profiles: the sampling period in nanoseconds (one sample stands for this
    // much of the default metric; pprof's `period`). 0: every value is measured.
    std::uint64_t periodNs = 0;
    std::vector<Frame> frames;
    std::vector<Tree> threads;  // one tree per runtime thread
    Tree merged;                // all threads' trees merged by call path
    std::vector<Span> spans;    // timed calls, bounded (may be empty)
    std::vector<ThreadInfo> threadNames;  // names for threads that have spans but no tree
    // Sampled profiles: their samples in time order, when the tool kept them (the
    // counter kTimelineNotKept says how many it did not keep).
    std::vector<TimedSample> timeline;
    std::vector<std::pair<std::string, std::uint64_t>> counters;  // diagnostics

    // The index of the metric named `name`, or -1.
    int MetricIndex(const std::string &name) const;
    // Rebuilds `merged` from `threads`.
    void Merge();
    // The thread's name, or UnnamedThreadName(threadId).
    std::string ThreadName(std::uint64_t threadId) const;
    // Gives every unnamed tree and thread-name entry UnnamedThreadName(id).
    void NameThreads();
};

// Inclusive values per node and metric: totals[node][metric].
std::vector<std::vector<std::uint64_t>> Totals(const Tree &tree, std::size_t metrics);

// ---- Tables ---------------------------------------------------------------------

struct TableRow {
    std::uint32_t frame = 0;
    std::uint64_t calls = 0;  // sum of the "calls" metric (0 when there is none)
    std::uint64_t self = 0;   // of the ranking metric
    std::uint64_t total = 0;  // of the ranking metric, counted once under recursion
};

// Per-frame rows of the merged tree ranked by `metric`'s self value (then total).
// Totals count a frame's outermost activations only, so recursion is not inflated.
std::vector<TableRow> TopFrames(const Profile &profile, std::size_t metric);

// The top-N table people read on a terminal: method, calls, self %, total % (and
// self/total time when the profile has a time metric). Ranked by `metric`, or when
// it is -1 by wall time if measured, else the default metric.
// The unit a quantity of `metric` is shown in, chosen for the larger `whole`: times in
// us, ms or s, bytes in B, KiB, MiB or GiB; counts as they are (the metric's name,
// divisor 1). The top table and martini diff use it.
struct QuantityUnit {
    std::string name;
    double divisor = 1;
};
QuantityUnit UnitFor(const Metric &metric, std::uint64_t whole);

void WriteTopTable(const Profile &profile, std::ostream &out, std::size_t topN, int metric = -1);

// The threads a table is over when it is not over all of them (cgprof's exact time
// mode leaves out the threads that mostly waited): their ids, what they are for the
// header ("those that used CPU": "(3 of 12 threads: those that used CPU; ...)"), and
// a line printed under the header about the others (where to see them).
struct TableThreads {
    std::vector<std::uint64_t> ids;
    std::string what;
    std::string note;
};
// The table over those threads only: their trees merged, rows, percentages and the
// total of theirs alone.
void WriteTopTable(const Profile &profile, std::ostream &out, std::size_t topN, int metric,
                   const TableThreads &threads);

// ---- Sampled profiles: lines and time ------------------------------------------

// Counters a sampled profile carries: the samples its timeline did not keep (past the
// tool's budget; a time window needs them all), and the timeline's first sample time.
inline constexpr const char *kTimelineNotKept = "timeline_samples_not_kept";

// The hot lines: per (frame, line) the self value of `metric` of the nodes' samples at
// that line (Node::selfLines), ranked, as a table of `topN` rows: method, file:line,
// self, self %. Writes a line saying so when the profile has no lines.
void WriteHotLines(const Profile &profile, std::ostream &out, std::size_t topN, int metric = -1);

// Keeps what was sampled from `fromNs` to `toNs` (nanoseconds after the first sample
// of the timeline): every node's self values and lines are counted again from the
// timeline samples inside the window, the timeline cut to it and the merged tree
// rebuilt. Returns "" or why not (no timeline, or one with samples not kept).
std::string KeepTimeWindow(Profile &profile, std::uint64_t fromNs, std::uint64_t toNs);

// The timeline as a flame chart over time: per thread, a span per frame for each run
// of consecutive samples that share the frame's path (a sample lasts one period; a
// gap of more than two periods ends every open span). Category "sample".
std::vector<Span> TimelineSpans(const Profile &profile);

// ---- Formats (docs/formats.md) --------------------------------------------------

// `withSpans` false leaves "spans" empty (the HTML report shows trees, not slices).
void WriteJson(const Profile &profile, std::ostream &out, bool withSpans = true);
// Returns "" on success, else why the input is not a Martini profile (with the field
// or the position).
std::string ReadJson(std::istream &in, Profile &profile);
std::string ReadJsonFile(const std::string &path, Profile &profile);

// "a;b;c N" per call path of the merged tree, N the self value of `metric`. Paths
// whose value is below `minShare` of the total are left out (narrower than a pixel
// in any flame graph; JSON and pprof keep them), which keeps the file in proportion
// on trees with millions of deep paths. Recursion is folded: a frame that repeats
// the cycle of up to kFoldCycle frames just above it (A;A -> A, A;B;A;B -> A;B) is
// merged into the first occurrence, values added. Paths still deeper than
// `maxDepth` frames end in one "[N deeper frames cut]" frame holding their whole
// values (the JSON and pprof keep them).
inline constexpr double kCollapsedMinShare = 1e-6;
inline constexpr std::size_t kCollapsedMaxDepth = 512;
inline constexpr std::size_t kFoldCycle = 4;
struct CollapsedStats {
    std::uint64_t lines = 0;
    std::uint64_t foldedContexts = 0;  // calling contexts merged into a shallower one by folding
    std::uint64_t cutContexts = 0;     // calling contexts below maxDepth, kept as the cut frame
    std::size_t maxDepth = kCollapsedMaxDepth;
    // One line for the terminal when something was folded or cut, else "".
    std::string Note() const;
};
CollapsedStats WriteCollapsed(const Profile &profile, std::ostream &out, std::size_t metric,
                              double minShare = kCollapsedMinShare, std::size_t maxDepth = kCollapsedMaxDepth);

// Chrome trace event JSON (Perfetto UI, chrome://tracing). Uses the recorded spans;
// without spans, the timeline's samples over time (TimelineSpans); without either, lays each thread's tree out as a flame chart (widths from the
// default metric), marked "synthesized" in the metadata. When the counter
// kTraceCallsNotKept is non-zero the trace says it was cut (TraceCutNote) in its
// metadata and as an instant event at the first span.
inline constexpr const char *kTraceCallsNotKept = "trace_calls_not_kept";
// "trace cut after N calls (M more not kept): use trace=K to keep more", or "" when
// the profile's trace was not cut.
std::string TraceCutNote(const Profile &profile);
void WriteChromeTrace(const Profile &profile, std::ostream &out);

// pprof's profile.proto, gzipped. One sample per (thread, call path) with a value per
// metric and a "thread" label. Returns "" or the error.
std::string WritePprof(const Profile &profile, const std::string &path);

// The self-contained HTML report: flame graph (zoom, search, hover), top-N table,
// thread and metric choice. No network access needed to view it.
void WriteHtml(const Profile &profile, std::ostream &out);

// ---- Writing a set of files -------------------------------------------------------

enum Format : unsigned {
    kJson = 1u << 0,
    kCollapsed = 1u << 1,
    kChrome = 1u << 2,
    kPprof = 1u << 3,
    kHtml = 1u << 4,
    kAllFormats = kJson | kCollapsed | kChrome | kPprof | kHtml,
};

// Parses "json+collapsed+chrome+pprof+html" (also "all"); returns "" or the error.
std::string ParseFormats(const std::string &text, unsigned &formats);
// The file name a format gets: <base>.json, <base>.collapsed, <base>.trace.json,
// <base>.pb.gz, <base>.html.
std::string FileName(const std::string &base, Format format);

// Writes each requested format to <dir>/<FileName(base, format)>, creating dir.
// Appends the paths written to `written`, one message per failure to `errors`, and
// one line per format that left something out (folded or cut) to `notes`.
void WriteFiles(const Profile &profile, const std::string &dir, const std::string &base,
                unsigned formats, std::vector<std::string> &written,
                std::vector<std::string> &errors, std::vector<std::string> *notes = nullptr);

}  // namespace martini::report
