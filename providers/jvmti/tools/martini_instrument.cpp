// martini-instrument: rewrites the .class files of a directory the way the JVM agent
// does at class load, for testing the rewriter with the JVM's own verifier.
//
//   martini-instrument [--prefix P]... [--alloc] [--arrays] [--sites] [--no-calls] IN_DIR OUT_DIR ID_MAP
//
// Every method with code of every class under IN_DIR (whose name starts with one of
// the --prefix values, when given) gets call probes (not with --no-calls); ids are
// given in file order and written to ID_MAP as "id<TAB>class<TAB>method<TAB>descriptor".
// With --alloc every such class also gets allocation probes in its constructors, with
// a class probe id from the same sequence, written as "id<TAB>class<TAB><alloc><TAB>-".
// With --arrays every newarray/anewarray/multianewarray gets an array probe, with an
// id from the same sequence, written as
// "id<TAB>class<TAB><array><TAB>array-class method offset" ("int[] run 12").
// With --sites every thread-interaction call site (see instrumenter.h) gets a site
// probe, with an id from the same sequence, written as
// "id<TAB>class<TAB><site><TAB>kind method descriptor owner.name descriptor".
// Classes nobody wants are copied byte-for-byte. Exit 0 unless a file cannot be read
// or written.
#include "instrumenter.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;

int main(int argc, char **argv) {
    std::vector<std::string> prefixes, positional;
    bool allocProbes = false, callProbes = true, siteProbes = false, arrayProbes = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--prefix" && i + 1 < argc) {
            prefixes.push_back(argv[++i]);
        } else if (a == "--alloc") {
            allocProbes = true;
        } else if (a == "--arrays") {
            arrayProbes = true;
        } else if (a == "--sites") {
            siteProbes = true;
        } else if (a == "--no-calls") {
            callProbes = false;
        } else {
            positional.push_back(a);
        }
    }
    if (positional.size() != 3) {
        std::fprintf(stderr, "usage: martini-instrument [--prefix P]... [--alloc] [--arrays] [--sites] [--no-calls] IN_DIR OUT_DIR ID_MAP\n");
        return 1;
    }
    const fs::path in = positional[0], out = positional[1];
    std::ofstream map(positional[2]);
    std::vector<fs::path> files;
    for (const auto &e : fs::recursive_directory_iterator(in)) {
        if (e.is_regular_file() && e.path().extension() == ".class") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    std::int64_t nextId = 1;
    unsigned classes = 0, methods = 0, skipped = 0, constructors = 0, sites = 0, arrays = 0;
    for (const auto &f : files) {
        std::ifstream is(f, std::ios::binary);
        std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(is)), {});
        auto wanted = [&](const martini::jvm::ClassDecl &c) {
            bool yes = prefixes.empty();
            for (const auto &p : prefixes) yes |= c.internalName.rfind(p, 0) == 0;
            return yes;
        };
        auto select = [&](const martini::jvm::ClassDecl &c, const martini::jvm::MethodDecl &m) -> std::int64_t {
            if (!wanted(c)) return martini::jvm::kNoProbe;
            const std::int64_t id = nextId++;
            map << id << '\t' << c.internalName << '\t' << m.name << '\t' << m.descriptor << '\n';
            return id;
        };
        auto selectAlloc = [&](const martini::jvm::ClassDecl &c) -> std::int64_t {
            if (!wanted(c)) return martini::jvm::kNoProbe;
            const std::int64_t id = nextId++;
            map << id << '\t' << c.internalName << "\t<alloc>\t-\n";
            return id;
        };
        auto selectSite = [&](const martini::jvm::ClassDecl &c, const martini::jvm::MethodDecl &m,
                              const martini::jvm::CallSite &s) -> std::int64_t {
            if (!wanted(c)) return martini::jvm::kNoProbe;
            const std::int64_t id = nextId++;
            map << id << '\t' << c.internalName << "\t<site>\t" << static_cast<int>(s.kind) << ' ' << m.name << ' '
                << m.descriptor << ' ' << s.owner << '.' << s.name << ' ' << s.descriptor << '\n';
            return id;
        };
        auto selectArray = [&](const martini::jvm::ClassDecl &c, const martini::jvm::MethodDecl &m,
                               const martini::jvm::ArraySite &s) -> std::int64_t {
            if (!wanted(c)) return martini::jvm::kNoProbe;
            const std::int64_t id = nextId++;
            map << id << '\t' << c.internalName << "\t<array>\t" << s.arrayClass << ' ' << m.name << ' ' << s.offset
                << '\n';
            return id;
        };
        martini::jvm::Selectors selectors;
        if (callProbes) selectors.calls = select;
        if (allocProbes) selectors.allocs = selectAlloc;
        if (siteProbes) selectors.sites = selectSite;
        if (arrayProbes) selectors.arrays = selectArray;
        const auto r = martini::jvm::InstrumentClass(bytes, selectors);
        if (!r.parsed) std::fprintf(stderr, "martini-instrument: %s: not instrumented: %s\n", f.c_str(), r.error.c_str());
        for (const auto &s : r.skipped) std::fprintf(stderr, "martini-instrument: %s: left alone: %s\n", f.c_str(), s.c_str());
        for (const auto &s : r.allocSkipped) {
            std::fprintf(stderr, "martini-instrument: %s: no allocation probe: %s\n", f.c_str(), s.c_str());
        }
        for (const auto &s : r.sitesSkipped) {
            std::fprintf(stderr, "martini-instrument: %s: no site probes: %s\n", f.c_str(), s.c_str());
        }
        for (const auto &s : r.arraysSkipped) {
            std::fprintf(stderr, "martini-instrument: %s: no array probes: %s\n", f.c_str(), s.c_str());
        }
        sites += r.sitesProbed;
        arrays += r.arraysProbed;
        classes += r.changed ? 1 : 0;
        methods += r.instrumented;
        constructors += r.allocProbed;
        skipped += static_cast<unsigned>(r.skipped.size() + r.allocSkipped.size() + r.sitesSkipped.size() +
                                         r.arraysSkipped.size());
        const fs::path dest = out / fs::relative(f, in);
        fs::create_directories(dest.parent_path());
        std::ofstream os(dest, std::ios::binary);
        const auto &data = r.changed ? r.bytes : bytes;
        os.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
        if (!os) {
            std::fprintf(stderr, "martini-instrument: cannot write %s\n", dest.c_str());
            return 1;
        }
    }
    std::fprintf(stderr,
                 "martini-instrument: %u classes rewritten, %u methods instrumented, %u constructors with allocation "
                 "probes, %u site probes, %u array probes, %u left alone\n",
                 classes, methods, constructors, sites, arrays, skipped);
    return 0;
}
