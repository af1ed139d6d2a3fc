// pprof output: profile.proto through Debian's protobuf (lite runtime), gzipped with
// zlib.
#include "martini/report/profile.h"

#include "table_text.h"

#include "profile.pb.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>

namespace martini::report {

namespace {

class StringTable {
public:
    explicit StringTable(perftools::profiles::Profile &p) : p_(p) { Index(""); }
    std::int64_t Index(const std::string &s) {
        auto [it, added] = index_.emplace(s, static_cast<std::int64_t>(index_.size()));
        if (added) p_.add_string_table(s);
        return it->second;
    }

private:
    perftools::profiles::Profile &p_;
    std::unordered_map<std::string, std::int64_t> index_;
};

std::string Gzip(const std::string &data, std::string &out) {
    z_stream z{};
    if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return "zlib: deflateInit2 failed";
    out.resize(deflateBound(&z, data.size()) + 32);
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef *>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int r = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return r == Z_STREAM_END ? "" : "zlib: deflate failed";
}

// Builds profile.proto from a Profile, one part at a time, in the order the string
// table, functions and locations are numbered in.
class PprofBuilder {
public:
    explicit PprofBuilder(const Profile &profile)
        : profile_(profile), strings_(pb_), cutLocation_(profile.frames.size() + 1) {}

    perftools::profiles::Profile &Build() {
        AddSampleTypes();
        AddFrames();
        threadKey_ = strings_.Index("thread");
        for (const Tree &tree : profile_.threads) AddTree(tree);
        pb_.add_comment(strings_.Index("written by Martini " + profile_.tool +
                                       (profile_.mode.empty() ? "" : " (" + profile_.mode + ")")));
        return pb_;
    }

private:
    void AddSampleTypes() {
        for (const Metric &m : profile_.metrics) {
            auto *t = pb_.add_sample_type();
            t->set_type(strings_.Index(m.name));
            t->set_unit(strings_.Index(m.unit));
        }
        if (profile_.defaultMetric < profile_.metrics.size()) {
            const Metric &m = profile_.metrics[profile_.defaultMetric];
            pb_.set_default_sample_type(strings_.Index(m.name));
            // Exact profiles: every value is measured (one unit per call, nanosecond or
            // byte), not one sample per period, so the period is 1 of the default metric.
            // Sampled ones: the sampling period, as pprof's CPU profiles give it
            // (period_type cpu/nanoseconds, period 10000000 at 100 Hz).
            auto *period = pb_.mutable_period_type();
            period->set_type(strings_.Index(m.name));
            period->set_unit(strings_.Index(m.unit));
            pb_.set_period(profile_.periodNs != 0 ? static_cast<std::int64_t>(profile_.periodNs) : 1);
        }
    }

    // One function and one location per frame; ids are frame index + 1, with the
    // method's first line (Frame::line): the leaf of a sample, and callers whose call
    // site is not known. A caller whose call site is known (Node::callLine) gets a
    // location for that line, made on first use (ids after the cut marker's).
    void AddFrames() {
        for (std::size_t i = 0; i < profile_.frames.size(); ++i) {
            const Frame &f = profile_.frames[i];
            auto *fn = pb_.add_function();
            fn->set_id(i + 1);
            fn->set_name(strings_.Index(f.name));
            fn->set_system_name(strings_.Index(f.name + f.signature));
            fn->set_filename(strings_.Index(f.file));
            fn->set_start_line(f.line);
            auto *loc = pb_.add_location();
            loc->set_id(i + 1);
            auto *line = loc->add_line();
            line->set_function_id(i + 1);
            line->set_line(f.line);
        }
    }

    // The location of `frame` at `line` (0: the frame's own line).
    std::uint64_t LocationOf(std::uint32_t frame, std::uint32_t line) {
        if (line == 0 || static_cast<int>(line) == profile_.frames[frame].line) return frame + 1ull;
        auto [it, added] = callSites_.emplace(std::pair{frame, line}, cutLocation_ + 1 + callSites_.size());
        if (added) {
            auto *loc = pb_.add_location();
            loc->set_id(it->second);
            auto *l = loc->add_line();
            l->set_function_id(frame + 1ull);
            l->set_line(line);
        }
        return it->second;
    }

    // The "[deeper frames cut]" function and location, made on first use.
    void AddCutMarker() {
        if (cutAdded_) return;
        auto *fn = pb_.add_function();
        fn->set_id(cutLocation_);
        fn->set_name(strings_.Index("[deeper frames cut]"));
        fn->set_system_name(fn->name());
        auto *loc = pb_.add_location();
        loc->set_id(cutLocation_);
        loc->add_line()->set_function_id(cutLocation_);
        cutAdded_ = true;
    }

    // Calling contexts deeper than kCollapsedMaxDepth frames are charged, per method,
    // to one sample "method <- [deeper frames cut] <- their ancestor at that depth": a
    // recursion thousands of frames deep would otherwise make a sample per depth, each
    // with the whole stack (quadratic in the depth). Flat values per method stay exact.
    void AddTree(const Tree &tree) {
        const std::int64_t threadName = strings_.Index(profile_.ThreadName(tree.threadId));
        const std::size_t metrics = profile_.metrics.size();
        std::vector<std::uint32_t> depth(tree.nodes.size(), 0);
        std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::uint64_t>> cut;  // (ancestor at the cap, frame)
        std::vector<std::uint32_t> capAncestor(tree.nodes.size(), 0);
        for (std::uint32_t i = 1; i < tree.nodes.size(); ++i) {
            const Node &n = tree.nodes[i];
            depth[i] = depth[n.parent] + 1;
            capAncestor[i] = depth[i] == kCollapsedMaxDepth ? i : capAncestor[n.parent];
            bool any = false;
            for (std::uint64_t v : n.self) any |= v != 0;
            if (!any) continue;
            if (depth[i] <= kCollapsedMaxDepth) {
                AddLeafSamples(tree, i, threadName);
                continue;
            }
            auto &values = cut[{capAncestor[i], n.frame}];
            values.resize(metrics, 0);
            for (std::size_t k = 0; k < metrics && k < n.self.size(); ++k) values[k] += n.self[k];
        }
        for (const auto &[key, values] : cut) AddSample(tree, key.first, values, key.second, threadName);
    }

    // The node's own values as samples: one per line its samples fell at (the values
    // shared out by the lines' samples; the last line takes what rounding leaves), so
    // `pprof -lines` shows the hot line inside a method; one at the method's line when
    // no line is known.
    void AddLeafSamples(const Tree &tree, std::uint32_t leaf, std::int64_t threadName) {
        const Node &n = tree.nodes[leaf];
        std::uint64_t samples = 0;
        for (const auto &[line, count] : n.selfLines) samples += count;
        if (samples == 0) {
            AddSample(tree, leaf, n.self, kRootFrame, threadName);
            return;
        }
        std::vector<std::uint64_t> left = n.self, values(n.self.size());
        std::uint64_t seen = 0;
        for (std::size_t l = 0; l < n.selfLines.size(); ++l) {
            seen += n.selfLines[l].second;
            for (std::size_t k = 0; k < n.self.size(); ++k) {
                const std::uint64_t upTo = detail::MulDiv(n.self[k], seen, samples);
                values[k] = left[k] - (n.self[k] - upTo);
                left[k] -= values[k];
            }
            AddSample(tree, leaf, values, kRootFrame, threadName, n.selfLines[l].first);
        }
    }

    // `cutFrame` kRootFrame: the stack of `leaf`; else cutFrame <- cut <- leaf's stack.
    // `leafLine`: the line in the leaf's method (0: its first line).
    void AddSample(const Tree &tree, std::uint32_t leaf, const std::vector<std::uint64_t> &values,
                   std::uint32_t cutFrame, std::int64_t threadName, std::uint32_t leafLine = 0) {
        const bool beyond = cutFrame != kRootFrame;
        if (beyond) AddCutMarker();
        auto *s = pb_.add_sample();
        if (beyond) {
            s->add_location_id(cutFrame + 1ull);
            s->add_location_id(cutLocation_);
        }
        std::uint32_t line = 0;  // the call site in `at` of the frame below it
        for (std::uint32_t at = leaf; at != 0 && at != kNoParent; at = tree.nodes[at].parent) {
            s->add_location_id(LocationOf(tree.nodes[at].frame, at == leaf ? leafLine : line));
            line = tree.nodes[at].callLine;
        }
        const std::size_t metrics = profile_.metrics.size();
        for (std::size_t k = 0; k < metrics; ++k) s->add_value(static_cast<std::int64_t>(k < values.size() ? values[k] : 0));
        auto *label = s->add_label();
        label->set_key(threadKey_);
        label->set_str(threadName);
    }

    const Profile &profile_;
    perftools::profiles::Profile pb_;
    StringTable strings_;
    const std::uint64_t cutLocation_;
    bool cutAdded_ = false;
    std::int64_t threadKey_ = 0;  // the string "thread", the samples' label key
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> callSites_;  // (frame, line): location id
};

// The encoded profile, gzipped, to `path`.
std::string WriteGzipped(const perftools::profiles::Profile &pb, const std::string &path) {
    std::string raw, gz;
    if (!pb.SerializeToString(&raw)) return "cannot encode the pprof profile for '" + path + "'";
    if (std::string e = Gzip(raw, gz); !e.empty()) return e + " for '" + path + "'";
    std::FILE *f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return "cannot write '" + path + "': " + std::strerror(errno);
    const bool ok = std::fwrite(gz.data(), 1, gz.size(), f) == gz.size();
    const int savedErrno = errno;
    if (std::fclose(f) != 0 || !ok) return "cannot write '" + path + "': " + std::strerror(ok ? errno : savedErrno);
    return "";
}

}  // namespace

std::string WritePprof(const Profile &profile, const std::string &path) {
    PprofBuilder builder(profile);
    return WriteGzipped(builder.Build(), path);
}

}  // namespace martini::report
