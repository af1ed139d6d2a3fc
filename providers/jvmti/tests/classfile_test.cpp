// The class-file reader/rewriter's promises (instrumenter.h), checked on classes javac
// compiled at build time (MARTINI_TEST_CLASSES: Sample.java, AllocSample.java and the
// generated LargeMethods.java) and on malformed variants of them: an unselected class
// comes back unchanged, a malformed class is rejected with a reason and never crashes
// or reads out of bounds, rewritten output parses again, methods past the class file's
// limits are left alone while a back edge that no longer fits becomes goto_w, and
// allocation probes go right after the super() call of exactly the constructors that
// make one.
#include "instrumenter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <tuple>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace martini::jvm;

namespace {

using Bytes = std::vector<std::uint8_t>;

const fs::path kClasses = MARTINI_TEST_CLASSES;     // "" when javac was not found
const fs::path kSampleJava = MARTINI_SAMPLE_JAVA;

#define REQUIRE_CLASSES()                                                   \
    do {                                                                    \
        if (kClasses.empty()) GTEST_SKIP() << "javac not found at build time"; \
    } while (0)

Bytes ReadFile(const fs::path &p) {
    std::ifstream is(p, std::ios::binary);
    EXPECT_TRUE(is) << "cannot read " << p;
    return Bytes((std::istreambuf_iterator<char>(is)), {});
}

Bytes LoadClass(const std::string &internalName) { return ReadFile(kClasses / (internalName + ".class")); }

// Every class javac wrote for Sample.java, sorted by file name.
std::vector<fs::path> SampleClassFiles() {
    std::vector<fs::path> files;
    for (const auto &e : fs::directory_iterator(kClasses / "sample")) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

// Selects every method, ids 1, 2, 3, ...
struct SelectAll {
    std::int64_t next = 1;
    std::int64_t operator()(const ClassDecl &, const MethodDecl &) { return next++; }
};

std::int64_t SelectNone(const ClassDecl &, const MethodDecl &) { return kNoProbe; }

// Allocation probes for every class asked about, ids 1000, 1001, ...
struct AllocAll {
    std::int64_t next = 1000;
    std::int64_t operator()(const ClassDecl &) { return next++; }
};

const MethodDecl *FindMethod(const ClassDecl &c, const std::string &name, const std::string &desc) {
    for (const auto &m : c.methods) {
        if (m.name == name && m.descriptor == desc) return &m;
    }
    return nullptr;
}

std::vector<std::string> Signatures(const ClassDecl &c) {
    std::vector<std::string> s;
    for (const auto &m : c.methods) s.push_back(m.name + m.descriptor);
    return s;
}

// The 1-based line of Sample.java whose text contains `needle`.
std::uint32_t SourceLine(const std::string &needle) {
    std::ifstream is(kSampleJava);
    std::string line;
    for (std::uint32_t n = 1; std::getline(is, line); ++n) {
        if (line.find(needle) != std::string::npos) return n;
    }
    ADD_FAILURE() << "no line of " << kSampleJava << " contains " << needle;
    return 0;
}

// The code array of method `name`, found with a walker independent of the one under
// test (the classes here are well-formed; no bounds checks beyond what they need).
std::optional<Bytes> MethodCode(const Bytes &b, const std::string &name) {
    std::size_t p = 8;
    auto u1 = [&] { return b.at(p++); };
    auto u2 = [&] {
        const unsigned v = b.at(p) << 8 | b.at(p + 1);
        p += 2;
        return v;
    };
    auto u4 = [&] {
        const std::uint32_t hi = u2();
        return hi << 16 | u2();
    };
    const unsigned count = u2();
    std::vector<std::string> utf8(count);
    for (unsigned i = 1; i < count; ++i) {
        const std::uint8_t tag = u1();
        if (tag == 1) {
            const unsigned n = u2();
            utf8[i].assign(b.begin() + static_cast<std::ptrdiff_t>(p), b.begin() + static_cast<std::ptrdiff_t>(p + n));
            p += n;
        } else if (tag == 5 || tag == 6) {
            p += 8;
            ++i;
        } else if (tag == 7 || tag == 8 || tag == 16 || tag == 19 || tag == 20) {
            p += 2;
        } else if (tag == 15) {
            p += 3;
        } else {
            p += 4;
        }
    }
    p += 6;
    p += 2 * std::size_t{u2()};
    auto skipAttributes = [&] {
        for (unsigned n = u2(); n > 0; --n) {
            p += 2;
            p += u4();
        }
    };
    for (unsigned n = u2(); n > 0; --n) {
        p += 6;
        skipAttributes();
    }
    for (unsigned n = u2(); n > 0; --n) {
        p += 2;
        const std::string &mname = utf8.at(u2());
        p += 2;
        for (unsigned a = u2(); a > 0; --a) {
            const std::string &aname = utf8.at(u2());
            const std::uint32_t len = u4();
            if (aname == "Code" && mname == name) {
                const std::size_t codeAt = p + 8;
                const auto codeLen = static_cast<std::ptrdiff_t>(b.at(p + 4) << 24 | b.at(p + 5) << 16 | b.at(p + 6) << 8 | b.at(p + 7));
                return Bytes(b.begin() + static_cast<std::ptrdiff_t>(codeAt), b.begin() + static_cast<std::ptrdiff_t>(codeAt) + codeLen);
            }
            p += len;
        }
    }
    return std::nullopt;
}

// Writes small classes by hand, for shapes javac does not produce.
class ClassBuilder {
public:
    struct Attr {
        std::string name;
        Bytes body;
    };
    struct Method {
        std::string name = "m", descriptor = "()V";
        std::uint16_t access = kAccStatic, maxStack = 1, maxLocals = 1;
        Bytes code = {0xb1};  // return
        std::vector<std::array<std::uint16_t, 4>> exceptions;
        std::vector<Attr> attrs;  // inside Code
    };

    explicit ClassBuilder(std::uint16_t major = 52) : major_(major) {
        this_ = Class("Crafted");
        super_ = Class("java/lang/Object");
    }
    std::uint16_t Utf8(const std::string &s) {
        if (auto it = utf8_.find(s); it != utf8_.end()) return it->second;
        Bytes e = {1};
        U2(e, static_cast<unsigned>(s.size()));
        e.insert(e.end(), s.begin(), s.end());
        return utf8_[s] = Raw(e);
    }
    std::uint16_t Class(const std::string &name) {
        Bytes e = {7};
        U2(e, Utf8(name));
        return Raw(e);
    }
    // Any entry (tag and body), taking `slots` pool indexes.
    std::uint16_t Raw(const Bytes &entry, unsigned slots = 1) {
        pool_.insert(pool_.end(), entry.begin(), entry.end());
        const auto index = static_cast<std::uint16_t>(count_);
        count_ += slots;
        return index;
    }
    // Unused Utf8 entries until the pool count is `count`.
    void PadPoolTo(unsigned count) {
        while (count_ < count) Utf8("pad" + std::to_string(count_));
    }
    unsigned poolCount() const { return count_; }
    void Add(const Method &m) {
        Bytes &w = methods_;
        ++methodCount_;
        U2(w, m.access);
        U2(w, Utf8(m.name));
        U2(w, Utf8(m.descriptor));
        U2(w, 1);
        U2(w, Utf8("Code"));
        Bytes c;
        U2(c, m.maxStack);
        U2(c, m.maxLocals);
        U4(c, static_cast<std::uint32_t>(m.code.size()));
        c.insert(c.end(), m.code.begin(), m.code.end());
        U2(c, static_cast<unsigned>(m.exceptions.size()));
        for (const auto &e : m.exceptions) {
            for (std::uint16_t v : e) U2(c, v);
        }
        U2(c, static_cast<unsigned>(m.attrs.size()));
        for (const auto &a : m.attrs) {
            U2(c, Utf8(a.name));
            U4(c, static_cast<std::uint32_t>(a.body.size()));
            c.insert(c.end(), a.body.begin(), a.body.end());
        }
        U4(w, static_cast<std::uint32_t>(c.size()));
        w.insert(w.end(), c.begin(), c.end());
    }
    Bytes Build() const {
        Bytes b = {0xca, 0xfe, 0xba, 0xbe, 0, 0};
        U2(b, major_);
        U2(b, count_);
        b.insert(b.end(), pool_.begin(), pool_.end());
        U2(b, kAccPublic);
        U2(b, this_);
        U2(b, super_);
        U2(b, 0);  // interfaces
        U2(b, 0);  // fields
        U2(b, methodCount_);
        b.insert(b.end(), methods_.begin(), methods_.end());
        U2(b, 0);  // attributes
        return b;
    }

    static void U2(Bytes &b, unsigned v) {
        b.push_back(static_cast<std::uint8_t>(v >> 8));
        b.push_back(static_cast<std::uint8_t>(v));
    }
    static void U4(Bytes &b, std::uint32_t v) {
        U2(b, v >> 16);
        U2(b, v & 0xffff);
    }

private:
    std::uint16_t major_;
    unsigned count_ = 1;
    Bytes pool_, methods_;
    std::map<std::string, std::uint16_t> utf8_;
    std::uint16_t this_ = 0, super_ = 0;
    unsigned methodCount_ = 0;
};

// InstrumentClass must return, and what it returns must be consistent: a reason when
// the class is rejected, output that parses again (with the same methods) when changed.
// Returns "" or what went wrong.
std::string CheckInstrumentResult(const InstrumentResult &r) {
    if (!r.parsed) {
        if (r.error.empty()) return "rejected without a reason";
        if (r.changed || !r.bytes.empty()) return "rejected but returned bytes";
        return "";
    }
    if (!r.changed) return r.bytes.empty() ? "" : "unchanged but returned bytes";
    if (r.bytes.empty()) return "changed but no bytes";
    if (r.instrumented == 0 && r.allocProbed == 0 && r.sitesProbed == 0 && r.arraysProbed == 0) {
        return "changed but nothing instrumented";
    }
    if (!r.delegationOffsets.empty() && r.delegationOffsets.size() != r.decl.methods.size()) {
        return "delegationOffsets does not have one entry per method";
    }
    const InstrumentResult again = ParseClass(r.bytes);
    if (!again.parsed) return "output does not parse: " + again.error;
    if (Signatures(again.decl) != Signatures(r.decl)) return "output declares other methods";
    if (again.decl.internalName != r.decl.internalName) return "output declares another class";
    return "";
}

}  // namespace

TEST(Classfile, UnselectedClassIsReturnedByteForByteUnchanged) {
    REQUIRE_CLASSES();
    for (const auto &file : SampleClassFiles()) {
        const Bytes bytes = ReadFile(file);
        const Bytes copy = bytes;
        const InstrumentResult r = InstrumentClass(bytes, SelectNone);
        EXPECT_TRUE(r.parsed) << file << ": " << r.error;
        EXPECT_FALSE(r.changed) << file;
        EXPECT_TRUE(r.bytes.empty()) << file << ": an unchanged class returns no new bytes";
        EXPECT_EQ(r.instrumented, 0u) << file;
        EXPECT_TRUE(r.skipped.empty()) << file;
        EXPECT_EQ(bytes, copy) << file << ": the input was modified";
    }

    const InstrumentResult sample = ParseClass(LoadClass("sample/Sample"));
    ASSERT_TRUE(sample.parsed) << sample.error;
    const ClassDecl &c = sample.decl;
    EXPECT_EQ(c.internalName, "sample/Sample");
    EXPECT_EQ(c.superName, "java/lang/Object");
    EXPECT_EQ(c.sourceFile, "Sample.java");
    EXPECT_TRUE(c.accessFlags & kAccPublic);
    EXPECT_GE(c.majorVersion, 61);  // javac 17 or later
    ASSERT_NE(FindMethod(c, "<clinit>", "()V"), nullptr);
    ASSERT_NE(FindMethod(c, "main", "([Ljava/lang/String;)V"), nullptr);
    ASSERT_NE(FindMethod(c, "lambda$lambdas$0", "(I)I"), nullptr);
    const MethodDecl *longs = FindMethod(c, "longs", "(JD)J");
    ASSERT_NE(longs, nullptr);
    EXPECT_EQ(longs->accessFlags & (kAccStatic | kAccSynchronized), kAccStatic | kAccSynchronized);
    for (const auto &m : c.methods) EXPECT_TRUE(m.hasCode) << m.name;

    // fib is on one line; countdown's do/while spans three.
    const MethodDecl *fib = FindMethod(c, "fib", "(I)I");
    ASSERT_NE(fib, nullptr);
    ASSERT_EQ(fib->lines.size(), 1u);
    EXPECT_EQ(fib->lines[0].offset, 0u);
    EXPECT_EQ(fib->lines[0].line, SourceLine("static int fib(int n)"));
    const MethodDecl *countdown = FindMethod(c, "countdown", "(I)I");
    ASSERT_NE(countdown, nullptr);
    ASSERT_FALSE(countdown->lines.empty());
    EXPECT_EQ(countdown->lines[0].offset, 0u);
    EXPECT_EQ(countdown->lines[0].line, SourceLine("n--;"));
    std::set<std::uint32_t> lines;
    for (std::size_t i = 0; i < countdown->lines.size(); ++i) {
        lines.insert(countdown->lines[i].line);
        if (i > 0) {
            EXPECT_LT(countdown->lines[i - 1].offset, countdown->lines[i].offset);
        }
    }
    EXPECT_EQ(lines, (std::set<std::uint32_t>{SourceLine("n--;"), SourceLine("} while (n > 0);"),
                                             SourceLine("return n;")}));

    const InstrumentResult child = ParseClass(LoadClass("sample/Sample$Child"));
    ASSERT_TRUE(child.parsed) << child.error;
    EXPECT_EQ(child.decl.internalName, "sample/Sample$Child");
    EXPECT_EQ(child.decl.superName, "sample/Sample$Base");
    EXPECT_EQ(child.decl.sourceFile, "Sample.java");
    EXPECT_NE(FindMethod(child.decl, "<init>", "(IZ)V"), nullptr);
    EXPECT_NE(FindMethod(child.decl, "<init>", "(I)V"), nullptr);
    EXPECT_NE(FindMethod(child.decl, "<init>", "(Ljava/lang/String;)V"), nullptr);

    const InstrumentResult shape = ParseClass(LoadClass("sample/Sample$Shape"));
    ASSERT_TRUE(shape.parsed) << shape.error;
    EXPECT_TRUE(shape.decl.accessFlags & kAccInterface);
    const MethodDecl *area = FindMethod(shape.decl, "area", "()D");
    ASSERT_NE(area, nullptr);
    EXPECT_FALSE(area->hasCode);
    EXPECT_TRUE(area->accessFlags & kAccAbstract);
    const MethodDecl *describe = FindMethod(shape.decl, "describe", "()Ljava/lang/String;");
    ASSERT_NE(describe, nullptr);
    EXPECT_TRUE(describe->hasCode);
}

TEST(Classfile, TruncatedClassIsRejectedWithAReason) {
    REQUIRE_CLASSES();
    for (const std::string name : {"sample/Sample", "sample/Sample$Child"}) {
        const Bytes bytes = LoadClass(name);
        ASSERT_TRUE(ParseClass(bytes).parsed);
        for (std::size_t n = 0; n < bytes.size(); ++n) {
            // A copy of exactly n bytes, so that AddressSanitizer sees any read past it.
            const Bytes prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
            const InstrumentResult p = ParseClass(prefix);
            ASSERT_FALSE(p.parsed) << name << " cut to " << n << " bytes";
            ASSERT_FALSE(p.error.empty()) << name << " cut to " << n << " bytes";
            const InstrumentResult r = InstrumentClass(prefix, SelectAll{});
            ASSERT_FALSE(r.parsed) << name << " cut to " << n << " bytes";
            ASSERT_FALSE(r.error.empty()) << name << " cut to " << n << " bytes";
            ASSERT_FALSE(r.changed);
        }
    }
}

TEST(Classfile, MutatedClassNeverCrashes) {
    REQUIRE_CLASSES();
    std::vector<Bytes> seeds;
    for (const auto &file : SampleClassFiles()) seeds.push_back(ReadFile(file));
    for (const auto &e : fs::directory_iterator(kClasses / "alloc")) seeds.push_back(ReadFile(e.path()));
    std::mt19937 rng(20261122);  // fixed: the same mutants on every run
    constexpr int kMutants = 20000;
    static const std::uint8_t kInteresting[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0xff, 0xfe, 0x10, 0x40, 0xa7, 0xc8};
    int parsed = 0, changed = 0, failures = 0;
    for (int i = 0; i < kMutants; ++i) {
        Bytes m = seeds[rng() % seeds.size()];
        const unsigned changes = 1 + rng() % 8;
        for (unsigned k = 0; k < changes; ++k) {
            const std::size_t at = rng() % m.size();
            m[at] = rng() % 2 ? static_cast<std::uint8_t>(rng()) : kInteresting[rng() % std::size(kInteresting)];
        }
        // Every other mutant also gets allocation probes.
        const bool alloc = i % 2 == 1;
        const InstrumentResult r = alloc ? InstrumentClass(m, SelectAll{}, AllocAll{}) : InstrumentClass(m, SelectAll{});
        std::string problem = CheckInstrumentResult(r);
        // A class the reader rejects is never instrumented.
        if (problem.empty() && !ParseClass(m).parsed && r.parsed) problem = "ParseClass rejects what InstrumentClass took";
        if (problem.empty() && r.changed) {
            // The rewriter's own output goes through it again.
            problem = CheckInstrumentResult(alloc ? InstrumentClass(r.bytes, SelectAll{}, AllocAll{})
                                                  : InstrumentClass(r.bytes, SelectAll{}));
            if (!problem.empty()) problem = "instrumenting the output again: " + problem;
        }
        parsed += r.parsed ? 1 : 0;
        changed += r.changed ? 1 : 0;
        if (!problem.empty() && ++failures <= 5) ADD_FAILURE() << "mutant " << i << ": " << problem;
    }
    EXPECT_EQ(failures, 0);
    // The mutants exercise both paths: a good share still parse and are rewritten.
    EXPECT_GT(parsed, kMutants / 10);
    EXPECT_GT(changed, kMutants / 10);
    std::printf("%d mutants: %d parsed, %d rewritten\n", kMutants, parsed, changed);
}

TEST(Classfile, InstrumentedClassParsesAgainWithTheSameDeclarations) {
    REQUIRE_CLASSES();
    for (const auto &file : SampleClassFiles()) {
        const Bytes bytes = ReadFile(file);
        const InstrumentResult original = ParseClass(bytes);
        ASSERT_TRUE(original.parsed) << file << ": " << original.error;
        const InstrumentResult r = InstrumentClass(bytes, SelectAll{});
        ASSERT_TRUE(r.parsed) << file << ": " << r.error;
        EXPECT_TRUE(r.skipped.empty()) << file << ": " << r.skipped.front();
        unsigned withCode = 0;
        for (const auto &m : original.decl.methods) withCode += m.hasCode ? 1 : 0;
        EXPECT_EQ(r.instrumented, withCode) << file;
        EXPECT_EQ(r.changed, withCode > 0) << file;
        if (!r.changed) continue;
        ASSERT_NE(r.bytes, bytes);

        const InstrumentResult again = ParseClass(r.bytes);
        ASSERT_TRUE(again.parsed) << file << ": " << again.error;
        EXPECT_EQ(again.decl.internalName, original.decl.internalName);
        EXPECT_EQ(again.decl.superName, original.decl.superName);
        EXPECT_EQ(again.decl.accessFlags, original.decl.accessFlags);
        EXPECT_EQ(again.decl.majorVersion, original.decl.majorVersion);
        EXPECT_EQ(again.decl.sourceFile, original.decl.sourceFile);
        ASSERT_EQ(again.decl.methods.size(), original.decl.methods.size()) << file;
        for (std::size_t i = 0; i < original.decl.methods.size(); ++i) {
            const MethodDecl &a = original.decl.methods[i], &b = again.decl.methods[i];
            EXPECT_EQ(b.name, a.name);
            EXPECT_EQ(b.descriptor, a.descriptor);
            EXPECT_EQ(b.accessFlags, a.accessFlags);
            EXPECT_EQ(b.hasCode, a.hasCode);
            // Same lines, each still starting somewhere (offsets move by the probes).
            std::multiset<std::uint32_t> la, lb;
            for (const auto &l : a.lines) la.insert(l.line);
            for (const auto &l : b.lines) lb.insert(l.line);
            EXPECT_EQ(lb, la) << file << ": " << a.name << a.descriptor;
        }

        // Instrumenting the instrumented class again still gives a class that parses.
        const InstrumentResult twice = InstrumentClass(r.bytes, SelectAll{});
        ASSERT_TRUE(twice.parsed) << file << ": " << twice.error;
        EXPECT_EQ(twice.instrumented, withCode) << file;
        ASSERT_TRUE(twice.changed);
        const InstrumentResult twiceParsed = ParseClass(twice.bytes);
        ASSERT_TRUE(twiceParsed.parsed) << file << ": " << twiceParsed.error;
        EXPECT_EQ(Signatures(twiceParsed.decl), Signatures(original.decl));
    }
}

namespace {

// Instruments large/LargeMethods (see java/gen_large_methods.sh) selecting every method.
struct LargeMethods {
    Bytes original;
    InstrumentResult result;
    std::string SkipReason(const std::string &signature) const {
        for (const auto &s : result.skipped) {
            if (s.rfind(signature + ": ", 0) == 0) return s.substr(signature.size() + 2);
        }
        return "";
    }
};

LargeMethods InstrumentLargeMethods() {
    LargeMethods l;
    l.original = LoadClass("large/LargeMethods");
    l.result = InstrumentClass(l.original, SelectAll{});
    return l;
}

}  // namespace

TEST(Classfile, MethodThatWouldExceedTheCodeLimitIsLeftAlone) {
    REQUIRE_CLASSES();
    const LargeMethods l = InstrumentLargeMethods();
    ASSERT_TRUE(l.result.parsed) << l.result.error;
    ASSERT_TRUE(l.result.changed);
    const auto code = MethodCode(l.original, "tooBig");
    ASSERT_TRUE(code);
    // Fits as javac wrote it; enter (6) + leave (6) + handler (7) would not.
    EXPECT_LE(code->size(), 65535u);
    EXPECT_GT(code->size() + 19, 65535u);
    EXPECT_NE(l.SkipReason("tooBig(II)I").find("64 KiB"), std::string::npos) << l.SkipReason("tooBig(II)I");
    // Left byte for byte alone.
    EXPECT_EQ(MethodCode(l.result.bytes, "tooBig"), code);
    // The other methods still got their probes: <init>, main, small, widen.
    EXPECT_EQ(l.result.skipped.size(), 2u);  // tooBig and overflow
    EXPECT_EQ(l.result.instrumented, l.result.decl.methods.size() - 2);
    const auto small = MethodCode(l.result.bytes, "small");
    ASSERT_TRUE(small);
    EXPECT_EQ(small->size(), MethodCode(l.original, "small")->size() + 6 + 6 + 7);
    EXPECT_TRUE(ParseClass(l.result.bytes).parsed);
}

TEST(Classfile, BackEdgeThatNoLongerFitsIsWidenedToGotoW) {
    REQUIRE_CLASSES();
    const LargeMethods l = InstrumentLargeMethods();
    ASSERT_TRUE(l.result.parsed) << l.result.error;
    EXPECT_EQ(l.SkipReason("widen(II)I"), "");
    const auto before = MethodCode(l.original, "widen");
    const auto after = MethodCode(l.result.bytes, "widen");
    ASSERT_TRUE(before && after);
    // javac's back edge is the last `goto 0`, and fits 16 bits as written.
    const std::size_t back = before->size() - 5;  // goto 0; iload_0; ireturn
    ASSERT_EQ((*before)[back], 0xa7);
    const auto delta = static_cast<std::int16_t>((*before)[back + 1] << 8 | (*before)[back + 2]);
    EXPECT_EQ(delta, -static_cast<int>(back));
    EXPECT_GT(back + 40 * 6, 32768u);  // but not with 40 leave probes inside the loop
    // Instrumented: enter, 40 + 1 leaves, the handler, and the goto widened by 2 bytes.
    EXPECT_EQ(after->size(), before->size() + 6 + 41 * 6 + 7 + 2);
    const std::size_t newBack = after->size() - 7 - 8 - 5;  // handler; probe, iload_0, ireturn; goto_w
    ASSERT_EQ((*after)[newBack], 0xc8) << "goto_w";
    const auto wdelta = static_cast<std::int32_t>(std::uint32_t{(*after)[newBack + 1]} << 24 | (*after)[newBack + 2] << 16 |
                                                  (*after)[newBack + 3] << 8 | (*after)[newBack + 4]);
    EXPECT_EQ(wdelta, 6 - static_cast<std::int64_t>(newBack));  // to the first instruction after enter
    EXPECT_LT(wdelta, -32768);
}

TEST(Classfile, ConditionalBranchThatWouldOverflowIsLeftAlone) {
    REQUIRE_CLASSES();
    const LargeMethods l = InstrumentLargeMethods();
    ASSERT_TRUE(l.result.parsed) << l.result.error;
    EXPECT_NE(l.SkipReason("overflow(II)I").find("conditional branch"), std::string::npos)
        << l.SkipReason("overflow(II)I");
    EXPECT_EQ(MethodCode(l.result.bytes, "overflow"), MethodCode(l.original, "overflow"));
}

// ---- Regressions: inputs that broke a promise, found by the mutation test, by
// scripts/fuzz-classfile.sh, or by review. Each names the promise it checks.

// Found by MutatedClassNeverCrashes: a LineNumberTable whose count said fewer entries
// than its length held was accepted, and the rewriter re-emitted the entries under the
// old length, so its own output no longer parsed.
TEST(Classfile, LineTableWhoseCountDisagreesWithItsLengthIsRejected) {
    for (const std::string table : {"LineNumberTable", "LocalVariableTable", "LocalVariableTypeTable"}) {
        const unsigned entry = table == "LineNumberTable" ? 4 : 10;
        for (const unsigned declared : {0u, 1u, 3u}) {  // the body holds 2 entries
            ClassBuilder b;
            ClassBuilder::Method m;
            Bytes body;
            ClassBuilder::U2(body, declared);
            body.resize(2 + 2 * entry, 0);
            if (entry == 10) {  // a valid-looking variable: start 0, length 1, name, type, slot 0
                for (std::size_t at = 2; at < body.size(); at += 10) {
                    body[at + 3] = 1;
                    body[at + 5] = static_cast<std::uint8_t>(b.Utf8("v"));
                    body[at + 7] = static_cast<std::uint8_t>(b.Utf8("I"));
                }
            }
            m.attrs.push_back({table, body});
            b.Add(m);
            const Bytes bytes = b.Build();
            const InstrumentResult p = ParseClass(bytes);
            const InstrumentResult r = InstrumentClass(bytes, SelectAll{});
            EXPECT_FALSE(p.parsed) << table << " declaring " << declared;
            EXPECT_NE(p.error.find(table), std::string::npos) << p.error;
            EXPECT_FALSE(r.parsed) << table << " declaring " << declared;
            EXPECT_EQ(CheckInstrumentResult(r), "");
        }
        // The same table with a matching count is rewritten, and the output parses.
        ClassBuilder b;
        ClassBuilder::Method m;
        Bytes body;
        ClassBuilder::U2(body, 1);
        body.resize(2 + entry, 0);
        if (entry == 10) {
            body[5] = 1;
            body[7] = static_cast<std::uint8_t>(b.Utf8("v"));
            body[9] = static_cast<std::uint8_t>(b.Utf8("I"));
        }
        m.attrs.push_back({table, body});
        b.Add(m);
        const Bytes bytes = b.Build();
        const InstrumentResult r = InstrumentClass(bytes, SelectAll{});
        ASSERT_TRUE(r.changed) << table << ": " << r.error;
        EXPECT_EQ(CheckInstrumentResult(r), "") << table;
    }
}

// Found by review and by scripts/fuzz-classfile.sh (a mutated tag in Probes.class): a
// long or double in the last pool slot has no second slot; it was
// accepted, and the entries the rewriter appends were then misnumbered by one.
TEST(Classfile, LongInTheLastConstantPoolSlotIsRejected) {
    for (const std::uint8_t tag : {5, 6}) {
        ClassBuilder b;
        b.Add({});
        b.Raw({tag, 0, 0, 0, 0, 0, 0, 0, 1}, 1);  // counted as one slot: the last index
        const Bytes bytes = b.Build();
        const InstrumentResult p = ParseClass(bytes);
        EXPECT_FALSE(p.parsed);
        EXPECT_FALSE(p.error.empty());
        const InstrumentResult r = InstrumentClass(bytes, SelectAll{});
        EXPECT_FALSE(r.parsed);
        EXPECT_EQ(CheckInstrumentResult(r), "");

        // Counted as the two slots it takes, it is fine.
        ClassBuilder ok;
        ok.Add({});
        ok.Raw({tag, 0, 0, 0, 0, 0, 0, 0, 1}, 2);
        const Bytes okBytes = ok.Build();
        const InstrumentResult okResult = InstrumentClass(okBytes, SelectAll{});
        EXPECT_TRUE(okResult.changed) << okResult.error;
        EXPECT_EQ(CheckInstrumentResult(okResult), "");
    }
}

// Found by review: a tableswitch whose high bound is INT_MAX made the rewriter compute
// high as low + (entries + 1) - 2, a signed overflow (UBSan reports it in the
// sanitizer build).
TEST(Classfile, TableswitchUpToIntMaxIsRewrittenWithTheSameBounds) {
    constexpr std::int32_t kLow = std::numeric_limits<std::int32_t>::max() - 1;
    ClassBuilder b(49);  // before version 50: no stack map frames needed
    ClassBuilder::Method m;
    m.descriptor = "(I)I";
    m.code = {0x1a, 0xaa, 0, 0};  // iload_0; tableswitch, padded to offset 4
    ClassBuilder::U4(m.code, 23);  // default -> 24
    ClassBuilder::U4(m.code, static_cast<std::uint32_t>(kLow));
    ClassBuilder::U4(m.code, static_cast<std::uint32_t>(kLow + 1));
    ClassBuilder::U4(m.code, 25);  // -> 26
    ClassBuilder::U4(m.code, 27);  // -> 28
    m.code.insert(m.code.end(), {0x03, 0xac, 0x04, 0xac, 0x05, 0xac});  // iconst_0..2; ireturn
    b.Add(m);
    const Bytes bytes = b.Build();
    const InstrumentResult r = InstrumentClass(bytes, SelectAll{});
    ASSERT_TRUE(r.changed) << r.error;
    EXPECT_EQ(CheckInstrumentResult(r), "");
    const auto code = MethodCode(r.bytes, "m");
    ASSERT_TRUE(code);
    // enter probe (6), iload_0 at 6, tableswitch at 7, no padding, then default, low, high.
    ASSERT_EQ((*code)[7], 0xaa);
    auto s4 = [&](std::size_t at) {
        return static_cast<std::int32_t>(std::uint32_t{(*code)[at]} << 24 | (*code)[at + 1] << 16 |
                                         (*code)[at + 2] << 8 | (*code)[at + 3]);
    };
    EXPECT_EQ(s4(12), kLow);
    EXPECT_EQ(s4(16), kLow + 1);
}

// Found by review: max_stack is a u2 and the probes need one more word; 65535 + 1 was
// written as 0, a class the verifier rejects.
TEST(Classfile, MethodWithMaxStackAtTheLimitIsLeftAlone) {
    ClassBuilder b;
    ClassBuilder::Method full;
    full.name = "full";
    full.maxStack = 65535;
    b.Add(full);
    b.Add({});
    const Bytes bytes = b.Build();
    const InstrumentResult r = InstrumentClass(bytes, SelectAll{});
    ASSERT_TRUE(r.parsed) << r.error;
    ASSERT_EQ(r.skipped.size(), 1u);
    EXPECT_EQ(r.skipped[0].rfind("full()V: ", 0), 0u) << r.skipped[0];
    EXPECT_EQ(r.instrumented, 1u);
    EXPECT_EQ(CheckInstrumentResult(r), "");
    EXPECT_EQ(MethodCode(r.bytes, "full"), MethodCode(bytes, "full"));
}

// Found by review: the exception table and the Code attribute's attribute list have u2
// counts; one more handler or one more attribute (the added StackMapTable) wrapped the
// count to 0 and the output no longer parsed.
TEST(Classfile, MethodWhoseTablesWouldOverflowTheirCountsIsLeftAlone) {
    {
        ClassBuilder b;
        ClassBuilder::Method m;
        m.name = "handlers";
        m.exceptions.assign(65535, {0, 1, 0, 0});
        b.Add(m);
        b.Add({});
        const Bytes bytes = b.Build();
        ASSERT_TRUE(ParseClass(bytes).parsed);
        const InstrumentResult r = InstrumentClass(bytes, SelectAll{});
        ASSERT_TRUE(r.parsed) << r.error;
        ASSERT_EQ(r.skipped.size(), 1u);
        EXPECT_EQ(r.skipped[0].rfind("handlers()V: ", 0), 0u) << r.skipped[0];
        EXPECT_EQ(CheckInstrumentResult(r), "");
    }
    {
        ClassBuilder b;
        ClassBuilder::Method m;
        m.name = "attributes";
        m.attrs.assign(65535, {"LineNumberTable", {0, 0}});
        b.Add(m);
        b.Add({});
        const Bytes bytes = b.Build();
        ASSERT_TRUE(ParseClass(bytes).parsed);
        const InstrumentResult r = InstrumentClass(bytes, SelectAll{});
        ASSERT_TRUE(r.parsed) << r.error;
        ASSERT_EQ(r.skipped.size(), 1u);
        EXPECT_EQ(r.skipped[0].rfind("attributes()V: ", 0), 0u) << r.skipped[0];
        EXPECT_EQ(CheckInstrumentResult(r), "");
    }
}

// Found by review: when the constant pool filled up, the appender had already written
// the entry's bytes before refusing it, so a method skipped for a full pool left
// uncounted bytes in the pool of a class whose other methods were rewritten.
TEST(Classfile, FullConstantPoolLeavesTheMethodAloneAndTheOutputWellFormed) {
    // How many entries the probes take in a fresh class.
    ClassBuilder probe;
    probe.Add({});
    const Bytes probeBytes = probe.Build();
    const InstrumentResult first = InstrumentClass(probeBytes, SelectAll{});
    ASSERT_TRUE(first.changed);
    const unsigned added = (first.bytes[8] << 8 | first.bytes[9]) - probe.poolCount();

    // Exactly that much room: the method with a small id fits, the one whose id needs
    // an Integer constant (ldc_w) does not.
    ClassBuilder b;
    ClassBuilder::Method small, large;
    small.name = "small";
    large.name = "large";
    b.Add(small);
    b.Add(large);
    b.PadPoolTo(65535 - added);
    const Bytes bytes = b.Build();
    const InstrumentResult r = InstrumentClass(bytes, [](const ClassDecl &, const MethodDecl &m) -> std::int64_t {
        return m.name == "small" ? 1 : 100000;
    });
    ASSERT_TRUE(r.parsed) << r.error;
    EXPECT_EQ(r.instrumented, 1u);
    ASSERT_EQ(r.skipped.size(), 1u);
    EXPECT_NE(r.skipped[0].find("constant pool is full"), std::string::npos) << r.skipped[0];
    EXPECT_EQ(r.bytes[8] << 8 | r.bytes[9], 65535);
    EXPECT_EQ(CheckInstrumentResult(r), "");
}

// ---- Allocation probes (exact allocation mode) ----------------------------------------

namespace {

// The parts of a class the allocation tests look at, read with a walker independent of
// the rewriter's (well-formed input only).
struct TestMethod {
    std::string name, descriptor;
    unsigned maxStack = 0;
    Bytes code;
    std::vector<std::array<unsigned, 4>> exceptions;  // start, end, handler, type
};
struct TestClass {
    std::vector<std::uint8_t> tags;
    std::vector<std::string> utf8;
    std::vector<std::array<unsigned, 2>> refs;  // Class: {name}; member refs and NameAndType: {a, b}
    std::vector<std::int32_t> ints;
    unsigned thisClass = 0;
    std::vector<TestMethod> methods;

    std::string ClassName(unsigned i) const { return tags.at(i) == 7 ? utf8.at(refs.at(i)[0]) : "?"; }
    // "owner.name descriptor" of a Methodref.
    std::string Member(unsigned i) const {
        if (tags.at(i) != 10) return "?";
        const auto nat = refs.at(refs.at(i)[1]);
        return ClassName(refs.at(i)[0]) + "." + utf8.at(nat[0]) + utf8.at(nat[1]);
    }
    const TestMethod *Find(const std::string &name, const std::string &desc) const {
        for (const auto &m : methods) {
            if (m.name == name && m.descriptor == desc) return &m;
        }
        return nullptr;
    }
};

TestClass ReadTestClass(const Bytes &b) {
    TestClass c;
    std::size_t p = 8;
    auto u1 = [&] { return b.at(p++); };
    auto u2 = [&] {
        const unsigned v = b.at(p) << 8 | b.at(p + 1);
        p += 2;
        return v;
    };
    auto u4 = [&] {
        const std::uint32_t hi = u2();
        return hi << 16 | u2();
    };
    const unsigned count = u2();
    c.tags.assign(count, 0);
    c.utf8.assign(count, "");
    c.refs.assign(count, {0, 0});
    c.ints.assign(count, 0);
    for (unsigned i = 1; i < count; ++i) {
        const std::uint8_t tag = c.tags[i] = u1();
        if (tag == 1) {
            const unsigned n = u2();
            c.utf8[i].assign(b.begin() + static_cast<std::ptrdiff_t>(p), b.begin() + static_cast<std::ptrdiff_t>(p + n));
            p += n;
        } else if (tag == 5 || tag == 6) {
            p += 8;
            ++i;
        } else if (tag == 7 || tag == 8 || tag == 16 || tag == 19 || tag == 20) {
            c.refs[i][0] = u2();
        } else if (tag == 15) {
            p += 3;
        } else if (tag == 3) {
            c.ints[i] = static_cast<std::int32_t>(u4());
        } else {
            c.refs[i][0] = u2();
            c.refs[i][1] = u2();
        }
    }
    p += 2;
    c.thisClass = u2();
    p += 2;
    p += 2 * std::size_t{u2()};
    auto skipAttributes = [&] {
        for (unsigned n = u2(); n > 0; --n) {
            p += 2;
            p += u4();
        }
    };
    for (unsigned n = u2(); n > 0; --n) {
        p += 6;
        skipAttributes();
    }
    for (unsigned n = u2(); n > 0; --n) {
        TestMethod m;
        p += 2;
        m.name = c.utf8.at(u2());
        m.descriptor = c.utf8.at(u2());
        for (unsigned a = u2(); a > 0; --a) {
            const std::string &aname = c.utf8.at(u2());
            const std::uint32_t len = u4();
            const std::size_t end = p + len;
            if (aname == "Code") {
                m.maxStack = u2();
                p += 2;
                const std::uint32_t codeLen = u4();
                m.code.assign(b.begin() + static_cast<std::ptrdiff_t>(p), b.begin() + static_cast<std::ptrdiff_t>(p + codeLen));
                p += codeLen;
                for (unsigned e = u2(); e > 0; --e) {
                    std::array<unsigned, 4> entry{};
                    for (auto &v : entry) v = u2();
                    m.exceptions.push_back(entry);
                }
            }
            p = end;
        }
        c.methods.push_back(std::move(m));
    }
    return c;
}

std::size_t MethodIndex(const ClassDecl &d, const std::string &name, const std::string &desc) {
    for (std::size_t i = 0; i < d.methods.size(); ++i) {
        if (d.methods[i].name == name && d.methods[i].descriptor == desc) return i;
    }
    ADD_FAILURE() << "no method " << name << desc;
    return 0;
}

// Offset of the first invokespecial (javac's super()/this() call in these constructors).
std::size_t FirstInvokespecial(const Bytes &code) {
    for (std::size_t i = 0; i < code.size(); ++i) {
        if (code[i] == 0xb7) return i;
    }
    ADD_FAILURE() << "no invokespecial";
    return 0;
}

unsigned U2At(const Bytes &b, std::size_t at) { return b.at(at) << 8 | b.at(at + 1); }

constexpr const char *kAllocProbe = "martini/runtime/Probes.alloc(Ljava/lang/Object;Ljava/lang/Class;I)V";
constexpr const char *kAllocByClassIdProbe = "martini/runtime/Probes.allocByClassId(Ljava/lang/Object;I)V";

// Checks the 10-byte allocation probe at `at`: aload_0; ldc_w <this class>; sipush id;
// invokestatic Probes.alloc.
void ExpectAllocProbe(const TestClass &c, const Bytes &code, std::size_t at, unsigned id) {
    ASSERT_GE(code.size(), at + 10);
    EXPECT_EQ(code[at], 0x2a) << "aload_0";
    EXPECT_EQ(code[at + 1], 0x13) << "ldc_w";
    EXPECT_EQ(U2At(code, at + 2), c.thisClass) << "the class's own Class constant";
    EXPECT_EQ(code[at + 4], 0x11) << "sipush";
    EXPECT_EQ(U2At(code, at + 5), id);
    EXPECT_EQ(code[at + 7], 0xb8) << "invokestatic";
    EXPECT_EQ(c.Member(U2At(code, at + 8)), kAllocProbe);
}

// A crafted class with the constructor `code` (max_stack 1, one local).
Bytes CraftedConstructorClass(std::uint16_t major, Bytes code) {
    ClassBuilder b(major);
    const std::uint16_t object = b.Class("java/lang/Object");
    Bytes nat = {12};
    ClassBuilder::U2(nat, b.Utf8("<init>"));
    ClassBuilder::U2(nat, b.Utf8("()V"));
    const std::uint16_t natIndex = b.Raw(nat);
    Bytes ref = {10};
    ClassBuilder::U2(ref, object);
    ClassBuilder::U2(ref, natIndex);
    const std::uint16_t init = b.Raw(ref);
    for (std::size_t i = 0; i + 2 < code.size(); ++i) {  // patch the invokespecial's index
        if (code[i] == 0xb7 && code[i + 1] == 0xff && code[i + 2] == 0xff) {
            code[i + 1] = static_cast<std::uint8_t>(init >> 8);
            code[i + 2] = static_cast<std::uint8_t>(init);
        }
    }
    ClassBuilder::Method m;
    m.name = "<init>";
    m.descriptor = "()V";
    m.access = kAccPublic;
    m.code = code;
    b.Add(m);
    return b.Build();
}

}  // namespace

TEST(Classfile, AllocProbeFollowsTheSuperCallOfEachConstructorThatMakesOne) {
    REQUIRE_CLASSES();
    const Bytes original = LoadClass("alloc/AllocSample$B");
    int asked = 0;
    const InstrumentResult r = InstrumentClass(original, ProbeSelector{}, [&](const ClassDecl &d) -> std::int64_t {
        ++asked;
        EXPECT_EQ(d.internalName, "alloc/AllocSample$B");
        return 7;
    });
    ASSERT_TRUE(r.changed) << r.error;
    EXPECT_EQ(CheckInstrumentResult(r), "");
    EXPECT_EQ(asked, 1) << "the selector is asked once per class";
    EXPECT_EQ(r.instrumented, 0u) << "no call probes without a ProbeSelector";
    EXPECT_EQ(r.allocProbed, 1u) << "B() calls super(int); B(String) delegates with this()";
    EXPECT_TRUE(r.allocSkipped.empty()) << r.allocSkipped.front();
    const TestClass before = ReadTestClass(original), after = ReadTestClass(r.bytes);
    EXPECT_EQ(after.ClassName(after.thisClass), "alloc/AllocSample$B");

    // B() { super(2); b = 3; }: the probe sits right after invokespecial A.<init>(I)V.
    const Bytes &o = before.Find("<init>", "()V")->code;
    const Bytes &n = after.Find("<init>", "()V")->code;
    const std::size_t call = FirstInvokespecial(o);
    EXPECT_EQ(before.Member(U2At(o, call + 1)), "alloc/AllocSample$A.<init>(I)V");
    ASSERT_EQ(n.size(), o.size() + 10);
    EXPECT_TRUE(std::equal(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(call + 3), n.begin()));
    ExpectAllocProbe(after, n, call + 3, 7);
    EXPECT_TRUE(std::equal(o.begin() + static_cast<std::ptrdiff_t>(call + 3), o.end(),
                           n.begin() + static_cast<std::ptrdiff_t>(call + 13)));
    EXPECT_EQ(after.Find("<init>", "()V")->maxStack, before.Find("<init>", "()V")->maxStack + 3);

    // B(String) { this(); ... }: left as it is; its this() call site is reported.
    const Bytes &delegating = before.Find("<init>", "(Ljava/lang/String;)V")->code;
    EXPECT_EQ(after.Find("<init>", "(Ljava/lang/String;)V")->code, delegating);
    ASSERT_EQ(r.delegationOffsets.size(), r.decl.methods.size());
    const std::size_t d = MethodIndex(r.decl, "<init>", "(Ljava/lang/String;)V");
    const auto offset = static_cast<std::size_t>(r.delegationOffsets[d]);
    ASSERT_EQ(delegating.at(offset), 0xb7);
    EXPECT_EQ(before.Member(U2At(delegating, offset + 1)), "alloc/AllocSample$B.<init>()V");
    EXPECT_EQ(r.delegationOffsets[MethodIndex(r.decl, "<init>", "()V")], -1);
}

TEST(Classfile, AllocAndCallProbesTogetherInOneConstructor) {
    REQUIRE_CLASSES();
    // Looper(int k) { super(); do { n++; } while (n < k); }: the loop's back edge
    // targets the instruction right after super(), which must not rerun the probe.
    const Bytes original = LoadClass("alloc/AllocSample$Looper");
    const InstrumentResult r = InstrumentClass(original, SelectAll{}, [](const ClassDecl &) -> std::int64_t { return 9; });
    ASSERT_TRUE(r.changed) << r.error;
    EXPECT_EQ(CheckInstrumentResult(r), "");
    EXPECT_EQ(r.allocProbed, 1u);
    EXPECT_EQ(r.instrumented, 1u);
    const TestClass before = ReadTestClass(original), after = ReadTestClass(r.bytes);
    const TestMethod &om = *before.Find("<init>", "(I)V"), &nm = *after.Find("<init>", "(I)V");
    const std::size_t call = FirstInvokespecial(om.code);
    ASSERT_EQ(call, 1u);  // aload_0; invokespecial Object.<init>
    // enter probe (6) + aload_0 + invokespecial, then the allocation probe.
    EXPECT_EQ(nm.code[0], 0x11);
    EXPECT_EQ(after.Member(U2At(nm.code, 4)), "martini/runtime/Probes.enter(I)V");
    const std::size_t probeAt = 6 + call + 3;
    ExpectAllocProbe(after, nm.code, probeAt, 9);
    // The back edge (if_icmplt) goes to the first instruction after the probe.
    std::optional<std::size_t> backEdge;
    for (std::size_t i = probeAt + 10; i < nm.code.size(); ++i) {
        if (nm.code[i] == 0xa1) backEdge = i;  // javac's only if_icmplt here
    }
    ASSERT_TRUE(backEdge);
    const auto delta = static_cast<std::int16_t>(U2At(nm.code, *backEdge + 1));
    EXPECT_EQ(static_cast<std::int64_t>(*backEdge) + delta, static_cast<std::int64_t>(probeAt + 10));
    // Two catch-all handlers: before super() (from after the enter probe to the call),
    // and after it, which covers the allocation probe too.
    ASSERT_EQ(nm.exceptions.size(), 2u);
    EXPECT_EQ(nm.exceptions[0][0], 6u);
    EXPECT_EQ(nm.exceptions[0][1], 6 + call);
    EXPECT_EQ(nm.exceptions[1][0], probeAt);
    EXPECT_EQ(nm.exceptions[1][3], 0u);
    EXPECT_EQ(nm.maxStack, om.maxStack + 3);
    EXPECT_TRUE(r.delegationOffsets.empty() || r.delegationOffsets[MethodIndex(r.decl, "<init>", "(I)V")] == -1);
}

TEST(Classfile, DelegationOffsetIsInTheRewrittenCode) {
    REQUIRE_CLASSES();
    // A(int x) { this(); a = x; } with call probes: the this() call moves by the enter probe.
    const InstrumentResult r = InstrumentClass(LoadClass("alloc/AllocSample$A"), SelectAll{}, AllocAll{});
    ASSERT_TRUE(r.changed) << r.error;
    const TestClass after = ReadTestClass(r.bytes);
    const Bytes &code = after.Find("<init>", "(I)V")->code;
    const auto offset = static_cast<std::size_t>(r.delegationOffsets.at(MethodIndex(r.decl, "<init>", "(I)V")));
    EXPECT_GE(offset, 6u);
    ASSERT_EQ(code.at(offset), 0xb7);
    EXPECT_EQ(after.Member(U2At(code, offset + 1)), "alloc/AllocSample$A.<init>()V");
    EXPECT_EQ(r.allocProbed, 1u);  // A() only
}

TEST(Classfile, ClassesThatCannotHaveInstancesOfTheirOwnAreNotAsked) {
    REQUIRE_CLASSES();
    for (const std::string name : {"alloc/AllocSample$Shape", "sample/Sample$Shape"}) {  // abstract; interface
        const Bytes bytes = LoadClass(name);
        bool asked = false;
        const InstrumentResult r = InstrumentClass(bytes, ProbeSelector{}, [&](const ClassDecl &) -> std::int64_t {
            asked = true;
            return 1;
        });
        EXPECT_TRUE(r.parsed) << r.error;
        EXPECT_FALSE(asked) << name;
        EXPECT_FALSE(r.changed) << name;
    }
    // kNoProbe: the class comes back unchanged.
    const InstrumentResult none = InstrumentClass(LoadClass("alloc/AllocSample$C"), ProbeSelector{},
                                                  [](const ClassDecl &) { return kNoProbe; });
    EXPECT_TRUE(none.parsed);
    EXPECT_FALSE(none.changed);
    EXPECT_TRUE(none.delegationOffsets.empty());
}

TEST(Classfile, AllocProbeIdPast32767IsAnIntegerConstant) {
    REQUIRE_CLASSES();
    const InstrumentResult r = InstrumentClass(LoadClass("alloc/AllocSample$C"), ProbeSelector{},
                                               [](const ClassDecl &) -> std::int64_t { return 40000; });
    ASSERT_TRUE(r.changed) << r.error;
    const TestClass after = ReadTestClass(r.bytes);
    const Bytes &code = after.Find("<init>", "()V")->code;
    const std::size_t at = FirstInvokespecial(code) + 3;
    EXPECT_EQ(code.at(at + 4), 0x13) << "ldc_w";
    EXPECT_EQ(after.tags.at(U2At(code, at + 5)), 3) << "an Integer constant";
    EXPECT_EQ(after.ints.at(U2At(code, at + 5)), 40000);
    EXPECT_EQ(after.Member(U2At(code, at + 8)), kAllocProbe);
}

TEST(Classfile, ClassFilesBefore49UseAllocByClassId) {
    // aload_0; invokespecial Object.<init>; return
    const Bytes code = {0x2a, 0xb7, 0xff, 0xff, 0xb1};
    for (const std::uint16_t major : {45, 48, 49, 50}) {
        const Bytes bytes = CraftedConstructorClass(major, code);
        const InstrumentResult r = InstrumentClass(bytes, ProbeSelector{}, [](const ClassDecl &) -> std::int64_t { return 5; });
        ASSERT_TRUE(r.changed) << major << ": " << r.error;
        EXPECT_EQ(CheckInstrumentResult(r), "");
        const TestClass after = ReadTestClass(r.bytes);
        const TestMethod &m = *after.Find("<init>", "()V");
        if (major < 49) {
            // aload_0; sipush 5; invokestatic allocByClassId: no class constant.
            ASSERT_EQ(m.code.size(), code.size() + 7) << major;
            EXPECT_EQ(m.code[4], 0x2a);
            EXPECT_EQ(m.code[5], 0x11);
            EXPECT_EQ(U2At(m.code, 6), 5u);
            EXPECT_EQ(m.code[8], 0xb8);
            EXPECT_EQ(after.Member(U2At(m.code, 9)), kAllocByClassIdProbe);
        } else {
            ASSERT_EQ(m.code.size(), code.size() + 10) << major;
            ExpectAllocProbe(after, m.code, 4, 5);
        }
        EXPECT_EQ(m.code.back(), 0xb1);
        EXPECT_EQ(m.maxStack, 1u + 3u);
    }
}

TEST(Classfile, ConstructorThatWritesLocalZeroGetsNoAllocProbe) {
    // aload_0; invokespecial Object.<init>; aconst_null; astore_0; return: after the
    // probe point local 0 is still `this`, but Martini does not follow the flow of
    // local 0, so any write to it rules the probe out.
    const Bytes bytes = CraftedConstructorClass(50, {0x2a, 0xb7, 0xff, 0xff, 0x01, 0x4b, 0xb1});
    const InstrumentResult r = InstrumentClass(bytes, ProbeSelector{}, [](const ClassDecl &) -> std::int64_t { return 5; });
    ASSERT_TRUE(r.parsed) << r.error;
    EXPECT_FALSE(r.changed);
    ASSERT_EQ(r.allocSkipped.size(), 1u);
    EXPECT_EQ(r.allocSkipped[0].rfind("<init>()V: ", 0), 0u) << r.allocSkipped[0];
    EXPECT_NE(r.allocSkipped[0].find("local variable 0"), std::string::npos) << r.allocSkipped[0];

    // With call probes it still gets those.
    const InstrumentResult both = InstrumentClass(bytes, SelectAll{}, [](const ClassDecl &) -> std::int64_t { return 5; });
    EXPECT_TRUE(both.changed) << both.error;
    EXPECT_EQ(both.instrumented, 1u);
    EXPECT_EQ(both.allocProbed, 0u);
    EXPECT_EQ(both.allocSkipped.size(), 1u);
}

TEST(Classfile, ConstructorWithMaxStackNearTheLimitGetsNoAllocProbe) {
    // A constructor with max_stack 65533: one call probe word fits, three do not.
    Bytes bytes = CraftedConstructorClass(50, {0x2a, 0xb7, 0xff, 0xff, 0xb1});
    const TestClass c = ReadTestClass(bytes);
    ASSERT_EQ(c.methods.size(), 1u);
    // max_stack is the first u2 of the Code attribute body: find it by its value 1
    // right before max_locals 1 and code length 5.
    const Bytes pattern = {0, 1, 0, 1, 0, 0, 0, 5};
    const auto it = std::search(bytes.begin(), bytes.end(), pattern.begin(), pattern.end());
    ASSERT_NE(it, bytes.end());
    it[0] = 0xff;
    it[1] = 0xfd;
    const InstrumentResult r = InstrumentClass(bytes, ProbeSelector{}, [](const ClassDecl &) -> std::int64_t { return 5; });
    ASSERT_TRUE(r.parsed) << r.error;
    EXPECT_FALSE(r.changed);
    ASSERT_EQ(r.allocSkipped.size(), 1u);
    EXPECT_NE(r.allocSkipped[0].find("max_stack"), std::string::npos) << r.allocSkipped[0];
    const InstrumentResult calls = InstrumentClass(bytes, SelectAll{});
    EXPECT_TRUE(calls.changed) << "call probes alone still fit";
}

TEST(Classfile, EverySampleClassWithAllocProbesParsesAgain) {
    REQUIRE_CLASSES();
    for (const std::string dir : {"alloc", "sample"}) {
        for (const auto &e : fs::directory_iterator(kClasses / dir)) {
            const Bytes bytes = ReadFile(e.path());
            for (const bool calls : {false, true}) {
                const InstrumentResult r = calls ? InstrumentClass(bytes, SelectAll{}, AllocAll{})
                                                 : InstrumentClass(bytes, ProbeSelector{}, AllocAll{});
                ASSERT_TRUE(r.parsed) << e.path() << ": " << r.error;
                EXPECT_TRUE(r.allocSkipped.empty()) << e.path() << ": " << r.allocSkipped.front();
                EXPECT_TRUE(r.skipped.empty()) << e.path() << ": " << r.skipped.front();
                EXPECT_EQ(CheckInstrumentResult(r), "") << e.path();
                if (r.changed) {
                    const InstrumentResult again = InstrumentClass(r.bytes, SelectAll{}, AllocAll{});
                    EXPECT_EQ(CheckInstrumentResult(again), "") << e.path();
                }
            }
        }
    }
}

// ---- Site probes (thread interactions) -----------------------------------------------

TEST(Classfile, SiteProbeSpillsJoinArgumentsToNewLocals) {
    REQUIRE_CLASSES();
    const Bytes original = LoadClass("interact/Interactions");
    std::vector<CallSite> seen;
    const InstrumentResult r = InstrumentClass(
        original, ProbeSelector{}, AllocSelector{},
        [&](const ClassDecl &, const MethodDecl &m, const CallSite &s) -> std::int64_t {
            if (m.name != "joinAll") return kNoProbe;
            seen.push_back(s);
            return 40000 + static_cast<std::int64_t>(seen.size());  // past 32767: ldc_w
        });
    ASSERT_TRUE(r.changed) << r.error;
    EXPECT_EQ(CheckInstrumentResult(r), "");
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(r.sitesProbed, 3u);
    EXPECT_TRUE(r.sitesSkipped.empty());
    EXPECT_EQ(seen[0].descriptor, "()V");
    EXPECT_EQ(seen[1].descriptor, "(J)V");
    EXPECT_EQ(seen[2].descriptor, "(JI)V");
    for (const CallSite &s : seen) {
        EXPECT_EQ(s.kind, Interaction::kJoin);
        EXPECT_EQ(s.opcode, 0xb6);
        EXPECT_EQ(s.owner, "java/lang/Thread");
    }
    const TestClass before = ReadTestClass(original), after = ReadTestClass(r.bytes);
    const TestMethod &om = *before.Find("joinAll", "([Ljava/lang/Thread;)V");
    const TestMethod &nm = *after.Find("joinAll", "([Ljava/lang/Thread;)V");
    EXPECT_EQ(nm.maxStack, om.maxStack + 2);
    // Find the (JI)V call in the new code and check what precedes it:
    //   istore base+2; lstore base; dup; ldc_w #40003; invokestatic interaction;
    //   lload base; iload base+2; invokevirtual join(JI)V
    std::size_t call = 0;
    for (std::size_t i = 0; i + 2 < nm.code.size(); ++i) {
        if (nm.code[i] == 0xb6 && after.Member(U2At(nm.code, i + 1)) == "java/lang/Thread.join(JI)V") call = i;
    }
    ASSERT_GT(call, 15u);
    const std::size_t p = call - 15;
    // Locals: the method's own (threads, timeout (2), nanos) = 4; spilled from 4.
    EXPECT_EQ(nm.code[p], 0x36) << "istore";
    EXPECT_EQ(nm.code[p + 1], 6);
    EXPECT_EQ(nm.code[p + 2], 0x37) << "lstore";
    EXPECT_EQ(nm.code[p + 3], 4);
    EXPECT_EQ(nm.code[p + 4], 0x59) << "dup";
    EXPECT_EQ(nm.code[p + 5], 0x13) << "ldc_w";
    EXPECT_EQ(after.ints.at(U2At(nm.code, p + 6)), 40003);
    EXPECT_EQ(nm.code[p + 8], 0xb8) << "invokestatic";
    EXPECT_EQ(after.Member(U2At(nm.code, p + 9)), "martini/runtime/Probes.interaction(Ljava/lang/Object;I)V");
    EXPECT_EQ(nm.code[p + 11], 0x16) << "lload";
    EXPECT_EQ(nm.code[p + 12], 4);
    EXPECT_EQ(nm.code[p + 13], 0x15) << "iload";
    EXPECT_EQ(nm.code[p + 14], 6);
    const std::size_t added = nm.code.size() - om.code.size();
    EXPECT_EQ(added, 7u /* join() */ + 11u /* join(J) */ + 15u /* join(JI) */);
}

TEST(Classfile, SleepSiteGetsAStaticProbeAndOtherCallsNone) {
    REQUIRE_CLASSES();
    const Bytes original = LoadClass("interact/Interactions$Sleeper");
    unsigned asked = 0;
    const InstrumentResult r = InstrumentClass(
        original, ProbeSelector{}, AllocSelector{}, [&](const ClassDecl &, const MethodDecl &m, const CallSite &s) {
            ++asked;
            EXPECT_EQ(m.name, "run");
            EXPECT_EQ(s.kind, Interaction::kSleep);
            EXPECT_EQ(s.opcode, 0xb8);
            return std::int64_t{5};
        });
    ASSERT_TRUE(r.changed) << r.error;
    EXPECT_EQ(asked, 1u) << "println and <init> calls are no candidate sites";
    const TestClass before = ReadTestClass(original), after = ReadTestClass(r.bytes);
    const Bytes &o = before.Find("run", "()V")->code, &n = after.Find("run", "()V")->code;
    ASSERT_EQ(n.size(), o.size() + 6);
    // ldc2_w 10000 (3 bytes), then: sipush 5; invokestatic interactionStatic(I)V
    EXPECT_EQ(n[3], 0x11);
    EXPECT_EQ(U2At(n, 4), 5u);
    EXPECT_EQ(after.Member(U2At(n, 7)), "martini/runtime/Probes.interactionStatic(I)V");
    EXPECT_EQ(before.Member(U2At(o, 4)), "java/lang/Thread.sleep(J)V");
    // A selector that wants nothing leaves the class byte for byte.
    const InstrumentResult none = InstrumentClass(original, ProbeSelector{}, AllocSelector{},
                                                  [](const ClassDecl &, const MethodDecl &, const CallSite &) {
                                                      return kNoProbe;
                                                  });
    EXPECT_FALSE(none.changed);
}

TEST(Classfile, ArrayProbeFollowsEachArrayAllocationAndBranchesLandAfterIt) {
    REQUIRE_CLASSES();
    const Bytes original = LoadClass("alloc/AllocSample");
    std::vector<ArraySite> seen;
    const InstrumentResult r = InstrumentClass(
        original, ProbeSelector{}, AllocSelector{}, SiteSelector{},
        [&](const ClassDecl &, const MethodDecl &m, const ArraySite &s) -> std::int64_t {
            if (m.name != "makeArrays") return kNoProbe;
            seen.push_back(s);
            if (s.arrayClass == "alloc.AllocSample$Filtered[]") return kNoProbe;  // a filter says no
            return 99 + static_cast<std::int64_t>(seen.size());
        });
    ASSERT_TRUE(r.changed) << r.error;
    EXPECT_EQ(CheckInstrumentResult(r), "");
    EXPECT_TRUE(r.arraysSkipped.empty());
    EXPECT_EQ(r.arraysProbed, 5u);
    EXPECT_EQ(r.instrumented + r.allocProbed + r.sitesProbed, 0u);
    // The sites in code order, with the arrays' classes known statically.
    const std::vector<std::tuple<std::uint8_t, std::string, std::string, unsigned>> want = {
        {0xbc, "[I", "int[]", 1},
        {0xbd, "[Ljava/lang/String;", "java.lang.String[]", 1},
        {0xc5, "[[I", "int[][]", 2},
        {0xbd, "[Lalloc/AllocSample$Elem;", "alloc.AllocSample$Elem[]", 1},
        {0xbd, "[Lalloc/AllocSample$Filtered;", "alloc.AllocSample$Filtered[]", 1},
        {0xbc, "[J", "long[]", 1}};
    ASSERT_EQ(seen.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(seen[i].opcode, std::get<0>(want[i])) << i;
        EXPECT_EQ(seen[i].descriptor, std::get<1>(want[i])) << i;
        EXPECT_EQ(seen[i].arrayClass, std::get<2>(want[i])) << i;
        EXPECT_EQ(seen[i].dimensions, std::get<3>(want[i])) << i;
    }
    const TestClass before = ReadTestClass(original), after = ReadTestClass(r.bytes);
    const TestMethod &om = *before.Find("makeArrays", "(I)V"), &nm = *after.Find("makeArrays", "(I)V");
    EXPECT_EQ(nm.maxStack, om.maxStack + 2);
    ASSERT_EQ(nm.code.size(), om.code.size() + 5 * 7);
    // Other methods (main, reflect: varargs arrays) are unchanged: the selector said no.
    EXPECT_EQ(after.Find("reflect", "()V")->code, before.Find("reflect", "()V")->code);
    // After each allocation (at its original offset plus the probes before it):
    // dup; sipush id; invokestatic allocArray; then the original next instruction.
    std::size_t shift = 0;
    unsigned id = 100;
    for (std::size_t k = 0; k < seen.size(); ++k) {
        const std::size_t at = seen[k].offset + shift;
        const std::size_t len = seen[k].opcode == 0xbc ? 2 : seen[k].opcode == 0xbd ? 3 : 4;
        ASSERT_EQ(nm.code.at(at), seen[k].opcode) << k;
        const std::size_t next = at + len;
        if (seen[k].arrayClass == "alloc.AllocSample$Filtered[]") {
            EXPECT_EQ(nm.code.at(next), 0xb3) << "no probe: putstatic follows";
            ++id;
            continue;
        }
        EXPECT_EQ(nm.code.at(next), 0x59) << "dup";
        EXPECT_EQ(nm.code.at(next + 1), 0x11) << "sipush";
        EXPECT_EQ(U2At(nm.code, next + 2), id++);
        EXPECT_EQ(nm.code.at(next + 4), 0xb8) << "invokestatic";
        EXPECT_EQ(after.Member(U2At(nm.code, next + 5)), "martini/runtime/Probes.allocArray(Ljava/lang/Object;I)V");
        EXPECT_EQ(nm.code.at(next + 7), 0xb3) << "putstatic";
        shift += 7;
    }
    // `i % 3 == 0 ? null : new long[2]`: aconst_null; goto L; iconst_2; newarray long;
    // L: putstatic. The goto lands on the putstatic, after the long[] probe.
    const std::size_t longAt = seen.back().offset + shift - 7;
    ASSERT_EQ(nm.code.at(longAt - 1), 0x05) << "iconst_2";
    ASSERT_EQ(nm.code.at(longAt - 4), 0xa7) << "goto";
    const auto rel = static_cast<std::int16_t>(U2At(nm.code, longAt - 3));
    EXPECT_EQ(static_cast<std::int64_t>(longAt - 4) + rel, static_cast<std::int64_t>(longAt + 2 + 7));
    // A selector that wants no array leaves the class byte for byte.
    const InstrumentResult none =
        InstrumentClass(original, ProbeSelector{}, AllocSelector{}, SiteSelector{},
                        [](const ClassDecl &, const MethodDecl &, const ArraySite &) { return kNoProbe; });
    EXPECT_FALSE(none.changed);
}
