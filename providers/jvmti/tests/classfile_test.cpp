// The class-file reader/rewriter's promises (instrumenter.h), checked on classes javac
// compiled at build time (MARTINI_TEST_CLASSES: Sample.java, AllocSample.java and the
// generated LargeMethods.java) and on malformed variants of them: an unselected class
// comes back unchanged, a malformed class is rejected with a reason and never crashes
// or reads out of bounds, rewritten output parses again, methods past the class file's
// limits are left alone while a back edge that no longer fits becomes goto_w. The
// probes for exact allocations and thread interactions: classfile_probe_test.cpp.

#include "classfile_test_support.h"

using namespace classfile_test;

TEST(Classfile, UnselectedClassIsReturnedByteForByteUnchanged) {
    REQUIRE_CLASSES();
    for (const auto &file : SampleClassFiles()) {
        const Bytes bytes = ReadFile(file);
        const Bytes copy = bytes;
        const InstrumentResult r = InstrumentClass(bytes, {.calls = SelectNone});
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
            const InstrumentResult r = InstrumentClass(prefix, {.calls = SelectAll{}});
            ASSERT_FALSE(r.parsed) << name << " cut to " << n << " bytes";
            ASSERT_FALSE(r.error.empty()) << name << " cut to " << n << " bytes";
            ASSERT_FALSE(r.changed);
        }
    }
}

// Covers every method, each with coverage index 0.
std::int64_t CoverageAll(const ClassDecl &, const MethodDecl &, CoverageLayout &) { return 0; }

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
        // Every other mutant also gets allocation probes, and every third coverage counters
        // (whose layout reads the mutated branch targets); every sixth gets coverage
        // counters alone.
        const bool alloc = i % 2 == 1;
        const CoverageSelector coverage = i % 3 == 0 ? CoverageAll : CoverageSelector{};
        const ProbeSelector calls = i % 6 == 0 ? ProbeSelector{} : ProbeSelector{SelectAll{}};
        const Selectors selectors = alloc ? Selectors{.calls = calls, .allocs = AllocAll{}, .coverage = coverage}
                                          : Selectors{.calls = calls, .coverage = coverage};
        const InstrumentResult r = InstrumentClass(m, selectors);
        std::string problem = CheckInstrumentResult(r);
        // A class the reader rejects is never instrumented.
        if (problem.empty() && !ParseClass(m).parsed && r.parsed) problem = "ParseClass rejects what InstrumentClass took";
        if (problem.empty() && r.changed) {
            // The rewriter's own output goes through it again.
            problem = CheckInstrumentResult(InstrumentClass(r.bytes, selectors));
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
        const InstrumentResult r = InstrumentClass(bytes, {.calls = SelectAll{}});
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
        const InstrumentResult twice = InstrumentClass(r.bytes, {.calls = SelectAll{}});
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
    l.result = InstrumentClass(l.original, {.calls = SelectAll{}});
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
    EXPECT_EQ(small->size(), MethodCode(l.original, "small")->size() + 6 + 6 + 7 + 9);
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
    // Instrumented: enter, 40 + 1 leaves, the two handlers, and the goto widened by 2 bytes.
    EXPECT_EQ(after->size(), before->size() + 6 + 41 * 6 + 7 + 9 + 2);
    const std::size_t newBack = after->size() - 9 - 7 - 8 - 5;  // handlers; probe, iload_0, ireturn; goto_w
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
            const InstrumentResult r = InstrumentClass(bytes, {.calls = SelectAll{}});
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
        const InstrumentResult r = InstrumentClass(bytes, {.calls = SelectAll{}});
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
        const InstrumentResult r = InstrumentClass(bytes, {.calls = SelectAll{}});
        EXPECT_FALSE(r.parsed);
        EXPECT_EQ(CheckInstrumentResult(r), "");

        // Counted as the two slots it takes, it is fine.
        ClassBuilder ok;
        ok.Add({});
        ok.Raw({tag, 0, 0, 0, 0, 0, 0, 0, 1}, 2);
        const Bytes okBytes = ok.Build();
        const InstrumentResult okResult = InstrumentClass(okBytes, {.calls = SelectAll{}});
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
    const InstrumentResult r = InstrumentClass(bytes, {.calls = SelectAll{}});
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
    const InstrumentResult r = InstrumentClass(bytes, {.calls = SelectAll{}});
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
        const InstrumentResult r = InstrumentClass(bytes, {.calls = SelectAll{}});
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
        const InstrumentResult r = InstrumentClass(bytes, {.calls = SelectAll{}});
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
    const InstrumentResult first = InstrumentClass(probeBytes, {.calls = SelectAll{}});
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
    const InstrumentResult r =
        InstrumentClass(bytes, {.calls = [](const ClassDecl &, const MethodDecl &m) -> std::int64_t {
            return m.name == "small" ? 1 : 100000;
        }});
    ASSERT_TRUE(r.parsed) << r.error;
    EXPECT_EQ(r.instrumented, 1u);
    ASSERT_EQ(r.skipped.size(), 1u);
    EXPECT_NE(r.skipped[0].find("constant pool is full"), std::string::npos) << r.skipped[0];
    EXPECT_EQ(r.bytes[8] << 8 | r.bytes[9], 65535);
    EXPECT_EQ(CheckInstrumentResult(r), "");
}

namespace martini::jvm {
namespace {

// A class whose methods cannot get probes (a full constant pool, ids out of range) is
// one line in the log with the count, not one line per method.
TEST(Classfile, MethodsLeftAloneAreSummarizedInOneLinePerClass) {
    ClassBuilder b;
    for (int i = 0; i < 500; ++i) {
        ClassBuilder::Method m;
        // Not "m" + std::to_string(i): g++ 12 -O3 reports a false -Wrestrict there
        // (GCC bug 105651).
        m.name = std::to_string(i);
        m.name.insert(m.name.begin(), 'm');
        b.Add(m);
    }
    const Bytes bytes = b.Build();
    const InstrumentResult r = InstrumentClass(
        bytes, {.calls = [](const ClassDecl &, const MethodDecl &) -> std::int64_t { return std::int64_t{1} << 40; }});
    ASSERT_TRUE(r.parsed) << r.error;
    ASSERT_EQ(r.skipped.size(), 500u);
    const std::vector<std::string> lines = SkippedSummary("app.Big", r);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].rfind("app.Big: 500 methods left as they are (no call events); the first, m", 0), 0u)
        << lines[0];
    EXPECT_NE(lines[0].find("probe id out of range"), std::string::npos) << lines[0];

    InstrumentResult one;
    one.skipped = {"f(I)V: a reason"};
    EXPECT_EQ(SkippedSummary("app.Small", one),
              std::vector<std::string>{"app.Small.f(I)V: a reason; the method is left as it is (no call events)"});
}

}  // namespace
}  // namespace martini::jvm

#include "gc_pairing.h"

namespace martini::jvm {
namespace {

// Nested collections from the JVM (start, start, finish, finish) are one GcStart/GcEnd
// pair for clients; a finish without a start is dropped.
TEST(GcPairing, NestedCollectionsAreOneProperlyPairedGc) {
    GcPairing p;
    EXPECT_FALSE(p.Finish());  // switched on during a collection
    EXPECT_TRUE(p.Start());
    EXPECT_FALSE(p.Start());
    EXPECT_FALSE(p.Finish());
    EXPECT_TRUE(p.Finish());
    EXPECT_TRUE(p.Start());  // the next collection
    EXPECT_TRUE(p.Finish());
    EXPECT_FALSE(p.Finish());
}

}  // namespace
}  // namespace martini::jvm
