// The rewriter's allocation, array and site probes (instrumenter.h): allocation probes
// right after the super() call of exactly the constructors that make one, array probes
// after each array allocation, site probes before thread-interaction calls; each
// verifiable and placed where branches and handlers expect it.

#include "classfile_test_support.h"
#include "probes.h"

#include <algorithm>

using namespace classfile_test;

// ---- The probe table -------------------------------------------------------------------

// What the rewriter calls and the agent binds (probes.h) is what the runtime's
// martini.runtime.Probes declares: each row a static method of that descriptor,
// native exactly where the agent binds one.
TEST(Classfile, ProbeTableMatchesTheRuntimeProbesClass) {
    REQUIRE_CLASSES();
    const InstrumentResult r = ParseClass(LoadClass(std::string(kProbesClass)));
    ASSERT_TRUE(r.parsed) << r.error;
    for (const ProbeMethod &pm : kProbeMethods) {
        const auto m = std::find_if(r.decl.methods.begin(), r.decl.methods.end(), [&](const MethodDecl &d) {
            return d.name == pm.name && d.descriptor == pm.descriptor;
        });
        ASSERT_NE(m, r.decl.methods.end()) << pm.name << pm.descriptor;
        EXPECT_NE(m->accessFlags & kAccStatic, 0) << pm.name;
        EXPECT_EQ((m->accessFlags & kAccNative) != 0, pm.native) << pm.name;
    }
}

// ---- Allocation probes (exact allocation mode) ----------------------------------------

TEST(Classfile, AllocProbeFollowsTheSuperCallOfEachConstructorThatMakesOne) {
    REQUIRE_CLASSES();
    const Bytes original = LoadClass("alloc/AllocSample$B");
    int asked = 0;
    const InstrumentResult r = InstrumentClass(original, {.allocs = [&](const ClassDecl &d) -> std::int64_t {
        ++asked;
        EXPECT_EQ(d.internalName, "alloc/AllocSample$B");
        return 7;
    }});
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
    const InstrumentResult r = InstrumentClass(
        original, {.calls = SelectAll{}, .allocs = [](const ClassDecl &) -> std::int64_t { return 9; }});
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
    // and after it, which covers the allocation probe too; then the one over the enter
    // probe itself, for a StackOverflowError (`this` uninitialized in its frame too).
    ASSERT_EQ(nm.exceptions.size(), 3u);
    EXPECT_EQ(nm.exceptions[0][0], 6u);
    EXPECT_EQ(nm.exceptions[0][1], 6 + call);
    EXPECT_EQ(nm.exceptions[1][0], probeAt);
    EXPECT_EQ(nm.exceptions[1][3], 0u);
    EXPECT_EQ(nm.exceptions[2][0], 0u);
    EXPECT_EQ(nm.exceptions[2][1], 6u);
    EXPECT_EQ(after.ClassName(nm.exceptions[2][3]), "java/lang/StackOverflowError");
    // It counts the lost enter with field accesses only, and rethrows.
    const std::size_t h = nm.exceptions[2][2];
    ASSERT_LE(h + 9, nm.code.size());
    EXPECT_EQ(nm.code[h], 0xb2);  // getstatic
    EXPECT_EQ(after.Member(U2At(nm.code, h + 1)), "martini/runtime/Probes.lostEntersI");
    EXPECT_EQ(nm.code[h + 3], 0x04);  // iconst_1
    EXPECT_EQ(nm.code[h + 4], 0x60);  // iadd
    EXPECT_EQ(nm.code[h + 5], 0xb3);  // putstatic
    EXPECT_EQ(U2At(nm.code, h + 6), U2At(nm.code, h + 1));
    EXPECT_EQ(nm.code[h + 8], 0xbf);  // athrow
    EXPECT_EQ(nm.maxStack, om.maxStack + 3);
    EXPECT_TRUE(r.delegationOffsets.empty() || r.delegationOffsets[MethodIndex(r.decl, "<init>", "(I)V")] == -1);
}

TEST(Classfile, DelegationOffsetIsInTheRewrittenCode) {
    REQUIRE_CLASSES();
    // A(int x) { this(); a = x; } with call probes: the this() call moves by the enter probe.
    const InstrumentResult r =
        InstrumentClass(LoadClass("alloc/AllocSample$A"), {.calls = SelectAll{}, .allocs = AllocAll{}});
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
        const InstrumentResult r = InstrumentClass(bytes, {.allocs = [&](const ClassDecl &) -> std::int64_t {
            asked = true;
            return 1;
        }});
        EXPECT_TRUE(r.parsed) << r.error;
        EXPECT_FALSE(asked) << name;
        EXPECT_FALSE(r.changed) << name;
    }
    // kNoProbe: the class comes back unchanged.
    const InstrumentResult none =
        InstrumentClass(LoadClass("alloc/AllocSample$C"), {.allocs = [](const ClassDecl &) { return kNoProbe; }});
    EXPECT_TRUE(none.parsed);
    EXPECT_FALSE(none.changed);
    EXPECT_TRUE(none.delegationOffsets.empty());
}

TEST(Classfile, AllocProbeIdPast32767IsAnIntegerConstant) {
    REQUIRE_CLASSES();
    const InstrumentResult r = InstrumentClass(LoadClass("alloc/AllocSample$C"),
                                               {.allocs = [](const ClassDecl &) -> std::int64_t { return 40000; }});
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
        const InstrumentResult r =
            InstrumentClass(bytes, {.allocs = [](const ClassDecl &) -> std::int64_t { return 5; }});
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
    const InstrumentResult r = InstrumentClass(bytes, {.allocs = [](const ClassDecl &) -> std::int64_t { return 5; }});
    ASSERT_TRUE(r.parsed) << r.error;
    EXPECT_FALSE(r.changed);
    ASSERT_EQ(r.allocSkipped.size(), 1u);
    EXPECT_EQ(r.allocSkipped[0].rfind("<init>()V: ", 0), 0u) << r.allocSkipped[0];
    EXPECT_NE(r.allocSkipped[0].find("local variable 0"), std::string::npos) << r.allocSkipped[0];

    // With call probes it still gets those.
    const InstrumentResult both =
        InstrumentClass(bytes, {.calls = SelectAll{}, .allocs = [](const ClassDecl &) -> std::int64_t { return 5; }});
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
    const InstrumentResult r = InstrumentClass(bytes, {.allocs = [](const ClassDecl &) -> std::int64_t { return 5; }});
    ASSERT_TRUE(r.parsed) << r.error;
    EXPECT_FALSE(r.changed);
    ASSERT_EQ(r.allocSkipped.size(), 1u);
    EXPECT_NE(r.allocSkipped[0].find("max_stack"), std::string::npos) << r.allocSkipped[0];
    const InstrumentResult calls = InstrumentClass(bytes, {.calls = SelectAll{}});
    EXPECT_TRUE(calls.changed) << "call probes alone still fit";
}

TEST(Classfile, EverySampleClassWithAllocProbesParsesAgain) {
    REQUIRE_CLASSES();
    for (const std::string dir : {"alloc", "sample"}) {
        for (const auto &e : fs::directory_iterator(kClasses / dir)) {
            const Bytes bytes = ReadFile(e.path());
            for (const bool calls : {false, true}) {
                const InstrumentResult r = calls ? InstrumentClass(bytes, {.calls = SelectAll{}, .allocs = AllocAll{}})
                                                 : InstrumentClass(bytes, {.allocs = AllocAll{}});
                ASSERT_TRUE(r.parsed) << e.path() << ": " << r.error;
                EXPECT_TRUE(r.allocSkipped.empty()) << e.path() << ": " << r.allocSkipped.front();
                EXPECT_TRUE(r.skipped.empty()) << e.path() << ": " << r.skipped.front();
                EXPECT_EQ(CheckInstrumentResult(r), "") << e.path();
                if (r.changed) {
                    const InstrumentResult again =
                        InstrumentClass(r.bytes, {.calls = SelectAll{}, .allocs = AllocAll{}});
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
        original, {.sites = [&](const ClassDecl &, const MethodDecl &m, const CallSite &s) -> std::int64_t {
            if (m.name != "joinAll") return kNoProbe;
            seen.push_back(s);
            return 40000 + static_cast<std::int64_t>(seen.size());  // past 32767: ldc_w
        }});
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
        original, {.sites = [&](const ClassDecl &, const MethodDecl &m, const CallSite &s) {
            ++asked;
            EXPECT_EQ(m.name, "run");
            EXPECT_EQ(s.kind, Interaction::kSleep);
            EXPECT_EQ(s.opcode, 0xb8);
            return std::int64_t{5};
        }});
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
    const InstrumentResult none = InstrumentClass(
        original, {.sites = [](const ClassDecl &, const MethodDecl &, const CallSite &) { return kNoProbe; }});
    EXPECT_FALSE(none.changed);
}

TEST(Classfile, ArrayProbeFollowsEachArrayAllocationAndBranchesLandAfterIt) {
    REQUIRE_CLASSES();
    const Bytes original = LoadClass("alloc/AllocSample");
    std::vector<ArraySite> seen;
    const InstrumentResult r = InstrumentClass(
        original, {.arrays = [&](const ClassDecl &, const MethodDecl &m, const ArraySite &s) -> std::int64_t {
            if (m.name != "makeArrays") return kNoProbe;
            seen.push_back(s);
            if (s.arrayClass == "alloc.AllocSample$Filtered[]") return kNoProbe;  // a filter says no
            return 99 + static_cast<std::int64_t>(seen.size());
        }});
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
    const InstrumentResult none = InstrumentClass(
        original, {.arrays = [](const ClassDecl &, const MethodDecl &, const ArraySite &) { return kNoProbe; }});
    EXPECT_FALSE(none.changed);
}
