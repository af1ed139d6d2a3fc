// pprof output: profile.proto through Debian's protobuf (lite runtime), gzipped with
// zlib.
#include "martini/report/profile.h"

#include "profile.pb.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
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

}  // namespace

std::string WritePprof(const Profile &profile, const std::string &path) {
    perftools::profiles::Profile pb;
    StringTable strings(pb);
    for (const Metric &m : profile.metrics) {
        auto *t = pb.add_sample_type();
        t->set_type(strings.Index(m.name));
        t->set_unit(strings.Index(m.unit));
    }
    if (profile.defaultMetric < profile.metrics.size()) {
        pb.set_default_sample_type(strings.Index(profile.metrics[profile.defaultMetric].name));
    }
    // One function and one location per frame; ids are frame index + 1.
    for (std::size_t i = 0; i < profile.frames.size(); ++i) {
        const Frame &f = profile.frames[i];
        auto *fn = pb.add_function();
        fn->set_id(i + 1);
        fn->set_name(strings.Index(f.name));
        fn->set_system_name(strings.Index(f.name + f.signature));
        fn->set_filename(strings.Index(f.file));
        fn->set_start_line(f.line);
        auto *loc = pb.add_location();
        loc->set_id(i + 1);
        auto *line = loc->add_line();
        line->set_function_id(i + 1);
        line->set_line(f.line);
    }
    const std::int64_t threadKey = strings.Index("thread");
    std::vector<std::uint64_t> stack;
    for (const Tree &tree : profile.threads) {
        const std::int64_t threadName = strings.Index(profile.ThreadName(tree.threadId));
        for (std::size_t i = 1; i < tree.nodes.size(); ++i) {
            const Node &n = tree.nodes[i];
            bool any = false;
            for (std::uint64_t v : n.self) any |= v != 0;
            if (!any) continue;
            auto *s = pb.add_sample();
            for (std::uint32_t at = static_cast<std::uint32_t>(i); at != 0 && at != kNoParent; at = tree.nodes[at].parent) {
                s->add_location_id(tree.nodes[at].frame + 1ull);
            }
            for (std::uint64_t v : n.self) s->add_value(static_cast<std::int64_t>(v));
            auto *label = s->add_label();
            label->set_key(threadKey);
            label->set_str(threadName);
        }
    }
    pb.add_comment(strings.Index("written by Martini " + profile.tool + (profile.mode.empty() ? "" : " (" + profile.mode + ")")));
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

}  // namespace martini::report
