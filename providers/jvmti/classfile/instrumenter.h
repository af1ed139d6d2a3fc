// Class-file rewriting for call-graph events (enter/leave probes) and for exact
// allocation events (allocation probes in constructors); keeps the class verifiable.
// No JVM types: the input is the bytes ClassFileLoadHook hands over, the output the
// bytes to give back. <probes> is martini/runtime/Probes; probes.h lists its methods.
//
// Call probes. For a method the ProbeSelector chose, with id N (a method with code,
// not native or abstract):
//   - at offset 0:                 push N; invokestatic <probes>.enter(I)V
//   - before every *return:        push N; invokestatic <probes>.leave(I)V
//   - a catch-all handler appended after the code, covering all original code:
//                                  push N; invokestatic <probes>.leaveExceptional(I)V; athrow
//     so a method left by an exception reports it from its own bytecode (no JVMTI
//     exception or frame-pop events). Constructors get two handlers: one for the code
//     before the super()/this() call (where `this` is uninitialized, which needs its
//     own stack map frame) and one after it.
//
// Allocation probes. The AllocSelector is asked once per class that can have
// instances (not an interface, not abstract, not java/lang/Object) and has a
// constructor with code; it returns a class probe id K (0 .. 2^31-1) or kNoProbe.
// With K, every constructor whose super()/this() call is a call to the SUPER class's
// <init> gets, right after that invokespecial (where `this` has just become
// initialized), 10 bytes:
//                                  aload_0; ldc_w <this class>; push K;
//                                  invokestatic <probes>.alloc(Ljava/lang/Object;Ljava/lang/Class;I)V
// (push K is sipush, or ldc_w of an Integer constant past 32767). Class files before
// version 49 cannot ldc a class constant; there the probe is 7 bytes,
//                                  aload_0; push K; invokestatic <probes>.allocByClassId(Ljava/lang/Object;I)V
// and the runtime compares the object's class itself. Constructors that delegate with
// this(...) get no allocation probe: the constructor they reach does (so an object is
// reported once, by its most-derived class's constructor: Probes.alloc reports only
// when o.getClass() is the class passed in). For those, InstrumentResult's
// `delegationOffsets` gives the offset of the this(...) call in the output code, so a
// stack walk can tell a delegation frame from a constructor that allocates another
// object of its own class. A constructor can get an allocation probe without call
// probes, or both (the allocation probe then lies inside the post-super() catch-all
// range and after the enter probe). A constructor that writes local 0 (so `this` is
// not known to be in it), or whose super() call cannot be found, is reported in
// `allocSkipped` and gets no allocation probe.
//
// Site probes (thread interactions). A SiteSelector is asked about every call site
// in a method with code that may reach one of: Object.notify()V, Object.notifyAll()V
// (invokevirtual/invokespecial of that name and descriptor, any owner: they are final
// in Object), Thread.start()V, join()V, join(J)V, join(JI)V, interrupt()V
// (invokevirtual/invokespecial, any owner: javac names the receiver's static type, a
// subclass of Thread or not, so the runtime checks the receiver), and the static
// java/lang/Thread.sleep(J)V and sleep(JI)V (invokestatic, owner java/lang/Thread).
// For a site it returns an id S (0 .. 2^31-1) or kNoProbe. Before the call:
//   no arguments:                  dup; push S; invokestatic <probes>.interaction(Ljava/lang/Object;I)V
//   join(J)/join(JI):              the arguments are stored to new locals past
//                                  max_locals (which grows by their words), then
//                                  dup; push S; invokestatic interaction; and reloaded
//   sleep (no receiver):           push S; invokestatic <probes>.interactionStatic(I)V
// A branch to the call lands on its site probe (its stack is the call's), so the
// StackMapTable only moves; the spilled locals are in no frame (Top). A method whose
// site probes cannot be inserted is reported in `sitesSkipped`.
//
// Array allocation probes (exact allocation mode). An ArraySelector is asked about
// every newarray, anewarray and multianewarray in a method with code, with the
// class of the array it creates ("int[]", "java.lang.String[]", "int[][]": known
// statically); it returns a site id A (0 .. 2^31-1) or kNoProbe. Right AFTER the
// instruction (the array reference on top of the stack is already initialized):
//                                  dup; push A; invokestatic <probes>.allocArray(Ljava/lang/Object;I)V
// The probe is reached only by falling through from the allocation: a branch to the
// instruction after it lands after the probe (on the instruction itself), and a stack
// map frame there stays at the instruction, whose state the probe leaves unchanged.
// max_stack grows by 2. A method whose array probes cannot be inserted is reported in
// `arraysSkipped`.
//
// Coverage probes. A CoverageSelector is asked once per method with code, with the
// method's blocks and conditional branches (CoverageLayout, offsets in the original
// code); it returns the method's coverage index M (0 .. 2^31-1) or kNoProbe. A block
// starts at offset 0, at every branch and switch target, after every branch, switch,
// return, athrow, jsr and ret, at every exception handler, and at every
// LineNumberTable entry (so that each line's first instruction starts a block: a line
// is counted when it is entered, even when a call on it ends by an exception). Each
// block has a counter (block i's is i), added to at its start (before the instruction:
// a branch to it lands on the add). A conditional branch's two outcomes are had from
// blocks when they can be: not taken from the next block when only falling through
// enters it, taken from the target when only this jump enters it (not the method's
// entry, no other jump or switch, no handler, not the instruction before by falling
// through). What cannot be had so is counted: `ran` before the branch (then taken is
// ran minus not taken), `fell` right after it (reached only by falling through). A
// switch's outcomes are its distinct targets, had from their blocks in the same way;
// one target that cannot be is `ran` (a counter before the switch) minus the others,
// and a switch with more than one such target is not counted. The
// method's entries are block 0's count, or counted at the method start when a jump
// reaches offset 0. The selector may ask for the calls alone (CallsOnly: one counter,
// the method's only probe `push M; invokestatic <probes>.count(I)V` at its start, which
// adds to the calling thread's count; no local, the frames unchanged). Otherwise the N
// counters are the calling thread's own long[] (so no add is lost), asked for once per
// call and kept in a new local L right past max_locals (spilled site arguments go after
// it):
//   at the method start:           push M; push N; invokestatic <probes>.counters(II)[J; astore L
//                                  (branches to old 0 land after it)
//   each add, with no call:        aload L; push k; dup2; laload; lconst_1; ladd; lastore
// The adds leave the stack as they found it (max_stack grows by 6). Every stack map
// frame is written as a full frame whose locals have L as long[] (the others as they
// were, with Top up to L), so the verifier knows L at every branch target. Methods that
// got coverage probes are listed in `coverage`.
//
// Branch offsets, switch padding, the exception table, StackMapTable (including
// Uninitialized(offset) types), LineNumberTable, LocalVariableTable and
// LocalVariableTypeTable are remapped; `goto` is widened to `goto_w` when a jump no
// longer fits. A method that cannot be rewritten safely (code would exceed 64 KiB, a
// conditional branch would overflow, type annotations on code, an unknown attribute
// inside Code) is left byte-for-byte alone and reported in `skipped` (it was to get
// call probes) and/or `allocSkipped` (it was to get an allocation probe). A class
// that does not parse is returned unchanged with the reason; the caller counts it.
// Unselected methods and every other part of the class are copied unchanged; a class
// with nothing selected comes back identical (`changed` false).
#pragma once

#include "probes.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace martini::jvm {

inline constexpr std::uint16_t kAccPublic = 0x0001;
inline constexpr std::uint16_t kAccPrivate = 0x0002;
inline constexpr std::uint16_t kAccProtected = 0x0004;
inline constexpr std::uint16_t kAccStatic = 0x0008;
inline constexpr std::uint16_t kAccSynchronized = 0x0020;
inline constexpr std::uint16_t kAccBridge = 0x0040;
inline constexpr std::uint16_t kAccNative = 0x0100;
inline constexpr std::uint16_t kAccInterface = 0x0200;
inline constexpr std::uint16_t kAccAbstract = 0x0400;
inline constexpr std::uint16_t kAccSynthetic = 0x1000;

struct LineEntry {
    std::uint32_t offset;  // bytecode index in the original code
    std::uint32_t line;
    bool operator==(const LineEntry &) const = default;
};

// What a class declares, as the filters and the data requests need it.
struct MethodDecl {
    std::string name;        // "<init>", "<clinit>", "run"
    std::string descriptor;  // "(ILjava/lang/String;)V"
    std::uint16_t accessFlags = 0;
    bool hasCode = false;    // false for native and abstract methods
    std::vector<LineEntry> lines;
};

struct ClassDecl {
    std::string internalName;  // "java/util/HashMap$Node"
    std::string superName;     // "" for java/lang/Object
    std::uint16_t accessFlags = 0;
    std::uint16_t majorVersion = 0;
    std::string sourceFile;    // SourceFile attribute, "" when absent
    std::vector<MethodDecl> methods;
};

// What a site probe's call may be; the values are Martini's EThreadInteractionType.
enum class Interaction : int { kNotify = 1, kNotifyAll = 2, kStart = 3, kJoin = 4, kSleep = 5, kInterrupt = 6 };

struct CallSite {
    Interaction kind;
    std::uint8_t opcode;     // 0xb6 invokevirtual, 0xb7 invokespecial, 0xb8 invokestatic
    std::string owner;       // the Methodref's class, as written: "java/lang/Thread", "app/Worker"
    std::string name;        // "join"
    std::string descriptor;  // "(J)V"
    std::uint32_t offset;    // bytecode index of the call in the original code
};

// An array allocation: newarray (0xbc), anewarray (0xbd) or multianewarray (0xc5).
struct ArraySite {
    std::uint8_t opcode;
    std::string descriptor;  // the created array's class: "[I", "[Ljava/lang/String;", "[[I"
    std::string arrayClass;  // the same in source form: "int[]", "java.lang.String[]", "int[][]"
    unsigned dimensions;     // multianewarray's dimension count; 1 otherwise
    std::uint32_t offset;    // bytecode index of the instruction in the original code
};

inline constexpr std::int64_t kNoProbe = -1;

// A method's blocks and conditional branches (see the header comment), original
// offsets, and where each count comes from: counter i is block i's; a branch outcome
// or the entries are counted only when no block has their count.
struct CoverageLayout {
    static constexpr std::int32_t kNone = -1;
    struct Branch {
        std::uint32_t offset = 0;
        std::int32_t ran = kNone;         // the counter before it: taken + not taken
        std::int32_t fell = kNone;        // the counter right after it: not taken
        std::int32_t fellBlock = kNone;   // or the block only its falling through enters
        std::int32_t takenBlock = kNone;  // the block only its jump enters (else ran - not taken)
        bool operator==(const Branch &) const = default;
    };
    // A tableswitch or lookupswitch: one outcome per distinct target, in the order first
    // named (default first; cases sharing a target are one outcome), each had from the
    // block only the switch enters there; at most one target entered otherwise too
    // (kNone) is `ran` minus the others. A switch with two such targets is not counted.
    struct Switch {
        std::uint32_t offset = 0;
        std::vector<std::int32_t> targetBlocks;
        std::int32_t ran = kNone;  // the counter before it, when a target is kNone
        bool operator==(const Switch &) const = default;
    };
    std::vector<std::uint32_t> blocks;  // ascending; the first is 0
    std::vector<Branch> branches;       // ascending: if<cond>, if_<cmp>, ifnull, ifnonnull
    std::vector<Switch> switches;       // ascending
    std::int32_t entry = kNone;         // the entries' counter; kNone: block 0's count (no jump to 0)
    std::uint32_t counters = 0;         // blocks, then the branch and entry counters
    std::size_t Counters() const { return counters; }
    // No block, no branch: one counter at the method start, its calls.
    static CoverageLayout CallsOnly() { return {{}, {}, {}, 0, 1}; }
    bool callsOnly() const { return blocks.empty(); }
    bool operator==(const CoverageLayout &) const = default;
};

// Called once per method with code; returns the method's coverage index or kNoProbe.
// It may replace the layout by CoverageLayout::CallsOnly() (the method's calls alone).
using CoverageSelector = std::function<std::int64_t(const ClassDecl &, const MethodDecl &, CoverageLayout &)>;

// Called once per method with code; returns the probe id (0 .. 2^31-1) or kNoProbe.
using ProbeSelector = std::function<std::int64_t(const ClassDecl &, const MethodDecl &)>;

// Called at most once per class (see the header comment for which classes); returns
// the class probe id (0 .. 2^31-1) or kNoProbe.
using AllocSelector = std::function<std::int64_t(const ClassDecl &)>;

// Called once per candidate call site (see the header comment), in code order per
// method; returns the site probe id (0 .. 2^31-1) or kNoProbe.
using SiteSelector = std::function<std::int64_t(const ClassDecl &, const MethodDecl &, const CallSite &)>;

// Called once per array allocation instruction (see the header comment), in code
// order per method; returns the site id (0 .. 2^31-1) or kNoProbe.
using ArraySelector = std::function<std::int64_t(const ClassDecl &, const MethodDecl &, const ArraySite &)>;

struct InstrumentResult {
    bool parsed = false;       // false: `error` says why; `bytes` is empty
    bool changed = false;      // true: `bytes` holds the rewritten class
    std::vector<std::uint8_t> bytes;
    std::string error;
    ClassDecl decl;
    std::vector<std::string> skipped;  // "name descriptor: reason" per method left alone
    unsigned instrumented = 0;         // methods that got call probes
    // Allocation probes (only when an AllocSelector chose the class):
    unsigned allocProbed = 0;               // constructors that got an allocation probe
    std::vector<std::string> allocSkipped;  // "name descriptor: reason" per constructor that did not
    // Per method of `decl` (same index): for a constructor that delegates with
    // this(...), the offset of that invokespecial in the output code; -1 otherwise.
    // Filled only for classes that got an allocation probe id (else empty).
    std::vector<std::int64_t> delegationOffsets;
    // Site probes (only with a SiteSelector):
    unsigned sitesProbed = 0;               // call sites that got a site probe
    std::vector<std::string> sitesSkipped;  // "name descriptor: reason" per method whose sites did not
    // Array allocation probes (only with an ArraySelector):
    unsigned arraysProbed = 0;               // allocation instructions that got a probe
    std::vector<std::string> arraysSkipped;  // "name descriptor: reason" per method whose arrays did not
    // Coverage probes (only with a CoverageSelector): per method that got them, its
    // index in `decl`, coverage index and layout.
    struct Covered {
        std::size_t method = 0;
        std::uint32_t index = 0;
        CoverageLayout layout;
    };
    std::vector<Covered> coverage;
    std::vector<std::string> coverageSkipped;  // "name descriptor: reason" per method that did not
};

// Parses the class and declares what it has (no rewriting).
InstrumentResult ParseClass(std::span<const std::uint8_t> classBytes);

// Which probes a class gets, by kind; an empty selector adds none of its kind.
struct Selectors {
    ProbeSelector calls = {};
    AllocSelector allocs = {};
    SiteSelector sites = {};
    ArraySelector arrays = {};
    CoverageSelector coverage = {};
};

// Parses, asks the selectors (see the header comment for what about), and rewrites
// the class with the probes they chose.
InstrumentResult InstrumentClass(std::span<const std::uint8_t> classBytes, const Selectors &selectors);

// What a class's rewriting left out, for the log: one line per kind of probe some of
// its methods did not get (call, allocation, site, array probes), in the form
// "<class>.<method><descriptor>: <reason>; <what is missing>" for one method and
// "<class>: <n> methods <what is missing>; the first, <method><descriptor>: <reason>"
// for more (a class whose constant pool is full can leave thousands of methods alone:
// one line each would bury everything else).
std::vector<std::string> SkippedSummary(std::string_view className, const InstrumentResult &result);

}  // namespace martini::jvm
