#include "planners.h"

#include "bytecode.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace martini::jvm::detail {

namespace {

constexpr std::uint32_t kProbeSize = 6;  // push id (3) + invokestatic (3)

// Pushes a probe id: sipush up to 32767, else an Integer constant.
void EmitId(Writer &w, std::int32_t id, PoolAppender &pool) {
    if (id <= 32767) {
        w.U1(kSipush);
        w.U2(static_cast<unsigned>(id));
    } else {
        w.U1(kLdcW);
        w.U2(pool.Integer(id));
    }
}

void EmitProbe(Writer &w, std::int32_t id, std::uint16_t method, PoolAppender &pool) {
    EmitId(w, id, pool);
    w.U1(kInvokestatic);
    w.U2(method);
}

std::vector<Frame> FramesOf(const ParsedClass &pc, const Code &code) {
    for (const auto &a : code.attrs) {
        if (a.name == "StackMapTable") return ReadFrames(pc, a);
    }
    return {};
}

std::uint16_t CpIndexAt(const Code &code, std::uint32_t off) {
    return static_cast<std::uint16_t>(code.bytes[off + 1] << 8 | code.bytes[off + 2]);
}

}  // namespace

// ---- Call probes ------------------------------------------------------------------------

namespace {

constexpr std::uint32_t kHandlerSize = kProbeSize + 1;  // probe + athrow

void AddCatchAll(MethodEdit &edit, std::uint32_t start, std::uint32_t end, bool thisUninitialized, std::int32_t id,
                 std::uint16_t leaveExceptional) {
    CatchAll h{start, end, edit.insertions.size(), {}};
    if (thisUninitialized) h.locals.push_back({6, 0});
    edit.catchAlls.push_back(std::move(h));
    edit.insertions.push_back({Placement::kHandler, 0, kHandlerSize, 0, 0, [=](Writer &w, PoolAppender &pool) {
                                   EmitProbe(w, id, leaveExceptional, pool);
                                   w.U1(kAthrow);
                               }});
}

// A StackOverflowError thrown by the call to `enter` (the stack was full at the method's
// first instruction) leaves no enter and, since the method never runs, no leave: the
// pairing holds but the call is not counted. This handler over the enter probe counts it
// in Probes.lostEnters with field accesses only (no call: the stack is still full) and
// rethrows. Stack: the error, then the count and 1.
constexpr std::uint32_t kLostEnterHandlerSize = 3 + 1 + 1 + 3 + 1;  // getstatic iconst_1 iadd putstatic athrow
constexpr unsigned kLostEnterHandlerStack = 3;

void AddLostEnterHandler(MethodEdit &edit, bool thisUninitialized, const ProbeRefs &refs) {
    CatchAll h{0, 0, edit.insertions.size(), {}, true, refs.stackOverflow};
    if (thisUninitialized) h.locals.push_back({6, 0});
    edit.catchAlls.push_back(std::move(h));
    edit.insertions.push_back({Placement::kHandler, 0, kLostEnterHandlerSize, 0, 0,
                               [field = refs.lostEnters](Writer &w, PoolAppender &) {
                                   w.U1(kGetstatic);
                                   w.U2(field);
                                   w.U1(kIconst1);
                                   w.U1(kIadd);
                                   w.U1(kPutstatic);
                                   w.U2(field);
                                   w.U1(kAthrow);
                               }});
    edit.minStack = std::max(edit.minStack, kLostEnterHandlerStack);
}

}  // namespace

void PlanCalls(const MethodCode &mc, const MethodDecl &d, std::int32_t id, const ProbeRefs &refs, MethodEdit &edit) {
    const auto probe = [&](Placement place, std::uint32_t at, Probe p) {
        edit.insertions.push_back({place, at, kProbeSize, 1, 0, [id, method = refs[p]](Writer &w, PoolAppender &pool) {
                                       EmitProbe(w, id, method, pool);
                                   }});
    };
    probe(Placement::kMethodStart, 0, Probe::kEnter);
    for (const Insn &in : mc.insns) {
        if (IsReturn(in.op)) probe(Placement::kBefore, in.off, Probe::kLeave);
    }
    edit.throwable = refs.throwable;
    edit.minStack = 2;  // a handler holds the exception and the id
    const std::uint16_t leaveExceptional = refs[Probe::kLeaveExceptional];
    if (d.name != "<init>") {
        AddCatchAll(edit, 0, mc.size(), false, id, leaveExceptional);
        AddLostEnterHandler(edit, false, refs);
        return;
    }
    // Before super()/this() `this` is uninitializedThis, and a handler's stack map frame
    // must carry that flag (JVMS 4.10.1.4), so constructors get one handler for that part
    // and one for the rest. The invokespecial <init> itself cannot be covered: after it
    // `this` is initialized while the verifier still holds the flag, which no stack map
    // frame expresses (HotSpot rejects it, and javac never emits it). An exception thrown
    // by the super constructor itself therefore escapes the probe; the agent's shadow
    // stack repairs the pairing.
    const std::optional<std::uint32_t> init = FindThisInitialized(*mc.pc, mc.code.bytes, mc.insns, mc.frames);
    const std::uint32_t split = init.value_or(mc.size());
    // Class files before version 50 are verified by type inference, which does not
    // allow a handler over code where `this` is uninitialized: cover the rest only.
    if (mc.pc->major >= kFramesVersion) AddCatchAll(edit, 0, split, true, id, leaveExceptional);
    if (init) AddCatchAll(edit, split + 3, mc.size(), false, id, leaveExceptional);
    if (mc.pc->major >= kFramesVersion) AddLostEnterHandler(edit, true, refs);
}

// ---- Allocation probes ------------------------------------------------------------------

CtorShape AnalyzeConstructor(const ParsedClass &pc, const Method &m) {
    const Code code = ReadCode(pc, m.attrs[static_cast<std::size_t>(m.code)]);
    const std::vector<Insn> insns = Decode(code.bytes);
    const std::vector<Frame> frames = FramesOf(pc, code);
    const std::optional<std::uint32_t> init = FindThisInitialized(pc, code.bytes, insns, frames);
    if (!init) throw SkipMethod("no super() or this() call found");
    CtorShape shape;
    shape.initAt = *init;
    const std::string owner = InvokeOwner(pc, code.bytes, *init);
    if (owner == pc.decl.internalName) {
        shape.delegates = true;
        return shape;
    }
    if (owner != pc.decl.superName) {
        throw SkipMethod("its <init> call is to " + owner + ", neither this class nor its superclass");
    }
    if (WritesLocal0(code.bytes, insns)) {
        throw SkipMethod("it writes local variable 0, so `this` is not known to be there after super()");
    }
    if (std::uint64_t{*init} + 3 >= code.bytes.size()) throw SkipMethod("the code ends at the super() call");
    return shape;
}

void PlanAllocation(const MethodCode &mc, std::int32_t id, std::uint32_t superCallAt, const ProbeRefs &refs,
                    MethodEdit &edit) {
    mc.At(std::int64_t{superCallAt} + 3, "allocation probe position");
    const std::uint16_t thisClass = refs.thisClass;
    const std::uint16_t method = refs[thisClass != 0 ? Probe::kAlloc : Probe::kAllocByClassId];
    // aload_0 (1) + ldc_w class (3) + push id (3) + invokestatic (3); without the class: 7.
    const std::uint32_t size = thisClass != 0 ? 10 : 7;
    // Right after super(), where `this` has just become initialized; a branch to the
    // next instruction does not run it.
    edit.insertions.push_back({Placement::kAfter, superCallAt, size, 3, 0, [=](Writer &w, PoolAppender &pool) {
                                   w.U1(kAload0);
                                   if (thisClass != 0) {
                                       w.U1(kLdcW);
                                       w.U2(thisClass);
                                   }
                                   EmitProbe(w, id, method, pool);
                               }});
}

// ---- Site probes ------------------------------------------------------------------------

namespace {

// {store opcode, load opcode, words} for a parameter descriptor's first character.
struct LocalOps {
    std::uint8_t store, load;
    unsigned words;
};

LocalOps LocalOpsFor(char c) {
    switch (c) {
        case 'J': return {0x37, 0x16, 2};
        case 'F': return {0x38, 0x17, 1};
        case 'D': return {0x39, 0x18, 2};
        case 'L': case '[': return {0x3a, 0x19, 1};
        default: return {0x36, 0x15, 1};  // I Z B C S
    }
}

// "(JI)V" -> "JI" (one character per parameter; references as 'L').
std::string ParamChars(const std::string &desc) {
    std::string out;
    std::size_t i = 1;
    while (i < desc.size() && desc[i] != ')') {
        const char c = desc[i];
        TypeWords(desc, i);
        out.push_back(c == '[' ? 'L' : c);
    }
    return out;
}

unsigned SpillWords(const SiteChoice &s) {
    unsigned words = 0;
    for (char c : s.args) words += LocalOpsFor(c).words;
    return s.receiver ? words : 0;
}

// Bytes of a site probe whose spilled arguments start at local `base`.
std::uint32_t SiteProbeSize(const SiteChoice &s, unsigned base) {
    std::uint32_t size = kProbeSize;
    if (!s.receiver) return size;
    size += 1;  // dup
    unsigned local = base;
    for (char c : s.args) {
        size += 2 * (local <= 255 ? 2 : 4);  // store and load, wide past 255
        local += LocalOpsFor(c).words;
    }
    return size;
}

void EmitLocal(Writer &w, std::uint8_t op, unsigned local) {
    if (local <= 255) {
        w.U1(op);
        w.U1(local);
    } else {
        w.U1(kWide);
        w.U1(op);
        w.U2(local);
    }
}

// The receiver is under the call's arguments: they go to locals from `base` (last
// first), the probe gets a copy of the receiver, and they come back.
void EmitSiteProbe(Writer &w, const SiteChoice &s, unsigned base, const ProbeRefs &refs, PoolAppender &pool) {
    if (!s.receiver) {
        EmitProbe(w, s.id, refs[Probe::kInteractionStatic], pool);
        return;
    }
    std::vector<unsigned> locals;
    unsigned local = base;
    for (char c : s.args) {
        locals.push_back(local);
        local += LocalOpsFor(c).words;
    }
    for (std::size_t k = s.args.size(); k-- > 0;) EmitLocal(w, LocalOpsFor(s.args[k]).store, locals[k]);
    w.U1(kDup);
    EmitProbe(w, s.id, refs[Probe::kInteraction], pool);
    for (std::size_t k = 0; k < s.args.size(); ++k) EmitLocal(w, LocalOpsFor(s.args[k]).load, locals[k]);
}

// The thread-interaction kind a Methodref called by `op` may reach, or none.
std::optional<Interaction> InteractionOf(std::uint8_t op, const std::string &owner, const std::string &name,
                                         const std::string &desc) {
    if (op == kInvokestatic) {
        if (owner == "java/lang/Thread" && name == "sleep" && (desc == "(J)V" || desc == "(JI)V")) {
            return Interaction::kSleep;
        }
        return std::nullopt;
    }
    if (name == "notify" && desc == "()V") return Interaction::kNotify;
    if (name == "notifyAll" && desc == "()V") return Interaction::kNotifyAll;
    if (name == "start" && desc == "()V") return Interaction::kStart;
    if (name == "interrupt" && desc == "()V") return Interaction::kInterrupt;
    if (name == "join" && (desc == "()V" || desc == "(J)V" || desc == "(JI)V")) return Interaction::kJoin;
    return std::nullopt;
}

bool IsInvoke(std::uint8_t op) { return op == kInvokevirtual || op == kInvokespecial || op == kInvokestatic; }

}  // namespace

std::vector<CallSite> FindCallSites(const ParsedClass &pc, const Code &code) {
    std::vector<CallSite> out;
    for (const Insn &in : Decode(code.bytes)) {
        if (!IsInvoke(in.op)) continue;
        const std::uint16_t ref = CpIndexAt(code, in.off);
        if (ref == 0 || ref >= pc.cp.tags.size() || pc.cp.tags[ref] != kMethodref) continue;
        auto [name, desc] = pc.cp.NameAndType(ref);
        if (name.empty() || name[0] == '<') continue;
        std::string owner = pc.cp.ClassName(pc.cp.U2At(pc.cp.at[ref]));
        const auto kind = InteractionOf(in.op, owner, name, desc);
        if (!kind) continue;
        out.push_back({*kind, in.op, std::move(owner), std::move(name), std::move(desc), in.off});
    }
    return out;
}

SiteChoice SiteChoiceFor(const CallSite &site, std::int32_t id) {
    return {site.offset, id, site.opcode != kInvokestatic, ParamChars(site.descriptor)};
}

void PlanSites(const MethodCode &mc, const std::vector<SiteChoice> &sites, const ProbeRefs &refs, MethodEdit &edit) {
    // The spilled arguments go to new locals past max_locals (and past those taken before).
    const unsigned spillBase = mc.code.maxLocals + edit.reservedLocals;
    unsigned spillWords = 0;
    for (const SiteChoice &s : sites) {
        const Insn &in = mc.At(s.at, "call site");
        if (!IsInvoke(in.op)) throw FormatError("call site " + std::to_string(in.off) + " is not an invoke");
        spillWords = std::max(spillWords, SpillWords(s));
    }
    if (spillBase + spillWords > 0xffff) throw SkipMethod("max_locals would exceed 65535 with the spilled arguments");
    // A branch to the call lands on its probe (its stack is the call's), so the
    // StackMapTable only moves; the spilled locals are in no frame (Top).
    for (const SiteChoice &s : sites) {
        edit.insertions.push_back({Placement::kBefore, s.at, SiteProbeSize(s, spillBase), 2,
                                   edit.reservedLocals + SpillWords(s),
                                   [refs, s, spillBase](Writer &w, PoolAppender &pool) {
                                       EmitSiteProbe(w, s, spillBase, refs, pool);
                                   }});
    }
}

// ---- Array allocation probes ------------------------------------------------------------

namespace {

// "[[I" -> "int[][]", "[Ljava/lang/String;" -> "java.lang.String[]".
std::string ArraySourceName(const std::string &desc) {
    std::size_t dims = 0;
    while (dims < desc.size() && desc[dims] == '[') ++dims;
    std::string elem = desc.substr(dims);
    static const char *const kPrim[][2] = {{"Z", "boolean"}, {"B", "byte"}, {"C", "char"},  {"S", "short"},
                                           {"I", "int"},     {"J", "long"}, {"F", "float"}, {"D", "double"}};
    bool prim = false;
    for (const auto &p : kPrim) {
        if (elem == p[0]) {
            elem = p[1];
            prim = true;
        }
    }
    if (!prim && elem.size() >= 2 && elem.front() == 'L' && elem.back() == ';') elem = elem.substr(1, elem.size() - 2);
    std::replace(elem.begin(), elem.end(), '/', '.');
    for (std::size_t i = 0; i < dims; ++i) elem += "[]";
    return elem;
}

bool IsArrayAllocation(std::uint8_t op) { return op == kNewarray || op == kAnewarray || op == kMultianewarray; }

// The descriptor of the array the instruction creates, and its dimension count.
std::pair<std::string, unsigned> CreatedArray(const ParsedClass &pc, const Code &code, const Insn &in) {
    static const char kAtype[] = "????ZCFDBSIJ";  // newarray's atype 4..11
    if (in.op == kNewarray) {
        const std::uint8_t t = code.bytes[in.off + 1];
        if (t < 4 || t > 11) throw FormatError("newarray with atype " + std::to_string(t));
        return {std::string("[") + kAtype[t], 1};
    }
    const std::uint16_t ref = CpIndexAt(code, in.off);
    if (ref == 0 || ref >= pc.cp.tags.size() || pc.cp.tags[ref] != kClass) {
        throw FormatError("array allocation at " + std::to_string(in.off) + " names no class");
    }
    const std::string name = pc.cp.ClassName(ref);
    if (in.op == kAnewarray) return {"[" + (name.starts_with("[") ? name : "L" + name + ";"), 1};
    return {name, code.bytes[in.off + 3]};
}

}  // namespace

std::vector<ArraySite> FindArraySites(const ParsedClass &pc, const Code &code) {
    std::vector<ArraySite> out;
    for (const Insn &in : Decode(code.bytes)) {
        if (!IsArrayAllocation(in.op)) continue;
        auto [desc, dims] = CreatedArray(pc, code, in);
        out.push_back({in.op, desc, ArraySourceName(desc), dims, in.off});
    }
    return out;
}

void PlanArrays(const MethodCode &mc, const std::vector<ArrayChoice> &arrays, const ProbeRefs &refs,
                MethodEdit &edit) {
    const std::uint16_t method = refs[Probe::kAllocArray];
    for (const ArrayChoice &a : arrays) {
        const Insn &in = mc.At(a.at, "array allocation");
        if (!IsArrayAllocation(in.op)) throw FormatError("array allocation " + std::to_string(in.off) + " is not one");
        if (&in == &mc.insns.back()) throw SkipMethod("the code ends at an array allocation");
        // After the instruction the new array is initialized; a branch to the next
        // instruction does not run the probe, and a frame there stays valid (the probe
        // leaves the stack as it found it).
        const auto emit = [id = a.id, method](Writer &w, PoolAppender &pool) {
            w.U1(kDup);
            EmitProbe(w, id, method, pool);
        };
        edit.insertions.push_back({Placement::kAfter, a.at, 7, 2, 0, emit});
    }
}

// ---- Coverage probes ----------------------------------------------------------------------

namespace {

bool IsConditional(std::uint8_t op) { return (op >= kIfeq && op < kGoto) || op == kIfnull || op == kIfnonnull; }

// Instructions after which the next one starts a block: control does not simply go on.
bool EndsBlock(std::uint8_t op) {
    return IsConditional(op) || op == kGoto || op == kGotoW || op == kJsr || op == kJsrW || op == 0xa9 /* ret */ ||
           op == kTableswitch || op == kLookupswitch || IsReturn(op) || op == kAthrow;
}

}  // namespace

namespace {

// Does control go on to the next instruction after this one (by falling through, or
// when a subroutine returns after a jsr)?
bool FallsThrough(std::uint8_t op) {
    return !(op == kGoto || op == kGotoW || op == 0xa9 /* ret */ || op == kTableswitch || op == kLookupswitch ||
             IsReturn(op) || op == kAthrow);
}

// How control enters each offset, beside falling through: jumps (branch, switch and jsr
// targets, each edge once), handlers and the method's entry.
struct Entries {
    std::vector<std::uint32_t> jumps;
    std::vector<bool> fallIn, handler;

    Entries(const Code &code, const std::vector<Insn> &insns)
        : jumps(code.bytes.size() + 1), fallIn(code.bytes.size() + 1), handler(code.bytes.size() + 1) {
        for (const Insn &in : insns) {
            for (std::int64_t t : in.targets) {
                if (t >= 0 && static_cast<std::size_t>(t) < jumps.size()) ++jumps[static_cast<std::size_t>(t)];
            }
            if (FallsThrough(in.op) && in.off + in.len < fallIn.size()) fallIn[in.off + in.len] = true;
        }
        for (const ExceptionEntry &e : code.exceptions) {
            if (e.handler < handler.size()) handler[e.handler] = true;
        }
    }
    // Only falling through from the instruction before enters `off`.
    bool OnlyFallIn(std::int64_t off) const { return Inside(off) && jumps[Index(off)] == 0 && !handler[Index(off)]; }
    // Exactly `n` jumps, and nothing else, enter `off`.
    bool OnlyJumps(std::int64_t off, std::uint32_t n) const {
        return Inside(off) && jumps[Index(off)] == n && !fallIn[Index(off)] && !handler[Index(off)];
    }
    // An offset in the code, past 0 (a target a malformed method puts elsewhere is none).
    bool Inside(std::int64_t off) const { return off > 0 && static_cast<std::uint64_t>(off) < jumps.size(); }
    static std::size_t Index(std::int64_t off) { return static_cast<std::size_t>(off); }
};

std::int32_t BlockAt(const std::vector<std::uint32_t> &blocks, std::uint32_t off) {
    const auto it = std::lower_bound(blocks.begin(), blocks.end(), off);
    return it != blocks.end() && *it == off ? static_cast<std::int32_t>(it - blocks.begin()) : CoverageLayout::kNone;
}

}  // namespace

CoverageLayout FindCoverageLayout(const Code &code, const std::vector<LineEntry> &lines) {
    const std::vector<Insn> insns = Decode(code.bytes);
    std::vector<bool> starts(code.bytes.size() + 1, false), isInsn(code.bytes.size() + 1, false);
    for (const Insn &in : insns) isInsn[in.off] = true;
    const auto mark = [&](std::int64_t off) {
        if (off >= 0 && static_cast<std::size_t>(off) < code.bytes.size() && isInsn[static_cast<std::size_t>(off)]) {
            starts[static_cast<std::size_t>(off)] = true;
        }
    };
    mark(0);
    for (const Insn &in : insns) {
        for (std::int64_t t : in.targets) mark(t);
        if (EndsBlock(in.op)) mark(in.off + in.len);
    }
    for (const ExceptionEntry &e : code.exceptions) mark(e.handler);
    for (const LineEntry &l : lines) mark(l.offset);
    CoverageLayout layout;
    for (std::size_t off = 0; off < code.bytes.size(); ++off) {
        if (starts[off]) layout.blocks.push_back(static_cast<std::uint32_t>(off));
    }
    auto next = static_cast<std::int32_t>(layout.blocks.size());
    const Entries entries(code, insns);
    for (const Insn &in : insns) {
        if (!IsConditional(in.op)) continue;
        CoverageLayout::Branch b;
        b.offset = in.off;
        const std::int64_t target = in.targets[0], after = in.off + in.len;
        if (entries.OnlyFallIn(after)) b.fellBlock = BlockAt(layout.blocks, static_cast<std::uint32_t>(after));
        if (entries.OnlyJumps(target, 1)) b.takenBlock = BlockAt(layout.blocks, static_cast<std::uint32_t>(target));
        if (b.takenBlock == CoverageLayout::kNone) b.ran = next++;
        if (b.fellBlock == CoverageLayout::kNone) b.fell = next++;
        layout.branches.push_back(b);
    }
    for (const Insn &in : insns) {
        if (in.op != kTableswitch && in.op != kLookupswitch) continue;
        std::vector<std::int64_t> distinct;
        std::vector<std::uint32_t> edges;  // this switch's jumps to each distinct target
        for (const std::int64_t t : in.targets) {
            const auto at = std::find(distinct.begin(), distinct.end(), t);
            if (at == distinct.end()) {
                distinct.push_back(t);
                edges.push_back(1);
            } else {
                ++edges[static_cast<std::size_t>(at - distinct.begin())];
            }
        }
        CoverageLayout::Switch sw;
        sw.offset = in.off;
        unsigned unknown = 0;
        for (std::size_t k = 0; k < distinct.size(); ++k) {
            const std::int64_t t = distinct[k];
            const bool only = entries.OnlyJumps(t, edges[k]);
            sw.targetBlocks.push_back(only ? BlockAt(layout.blocks, static_cast<std::uint32_t>(t)) : CoverageLayout::kNone);
            unknown += sw.targetBlocks.back() == CoverageLayout::kNone;
        }
        if (unknown > 1) continue;
        if (unknown == 1) sw.ran = next++;
        layout.switches.push_back(std::move(sw));
    }
    if (entries.jumps[0] != 0 || entries.handler[0]) layout.entry = next++;
    layout.counters = static_cast<std::uint32_t>(next);
    return layout;
}

namespace {

// Pushes an int constant in the fewest bytes: iconst_n, bipush, sipush or ldc_w.
std::uint32_t IntSize(std::uint32_t v) { return v <= 5 ? 1 : v <= 127 ? 2 : 3; }

void EmitInt(Writer &w, std::uint32_t v, PoolAppender &pool) {
    if (v <= 5) {
        w.U1(kIconst0 + v);
    } else if (v <= 127) {
        w.U1(kBipush);
        w.U1(v);
    } else {
        EmitId(w, static_cast<std::int32_t>(v), pool);
    }
}

// aload/astore of `local`: the one-byte forms up to 3, wide past 255.
std::uint32_t LocalSize(unsigned local) { return local <= 3 ? 1 : local <= 255 ? 2 : 4; }

void EmitLocalOp(Writer &w, std::uint8_t op, std::uint8_t shortForm0, unsigned local) {
    if (local <= 3) {
        w.U1(shortForm0 + local);
    } else {
        EmitLocal(w, op, local);
    }
}

// counters[k] += 1, the array in `local`: aload; push k; dup2; laload; lconst_1; ladd; lastore.
constexpr unsigned kAddStack = 6;  // array, index, array, index, then a long on them

std::uint32_t AddSize(unsigned local, std::uint32_t k) { return LocalSize(local) + IntSize(k) + 5; }

void EmitAdd(Writer &w, unsigned local, std::uint32_t k, PoolAppender &pool) {
    EmitLocalOp(w, kAload, kAload0, local);
    EmitInt(w, k, pool);
    for (const std::uint8_t op : {kDup2, kLaload, kLconst1, kLadd, kLastore}) w.U1(op);
}

}  // namespace

std::vector<VType> InitialLocals(const ParsedClass &pc, const MethodDecl &d, PoolAppender &pool) {
    std::vector<VType> locals;
    if ((d.accessFlags & kAccStatic) == 0) {
        const bool uninitialized = d.name == "<init>" && pc.decl.internalName != "java/lang/Object";
        locals.push_back(uninitialized ? VType{6, 0} : VType{7, pc.thisClass});
    }
    const std::string &desc = d.descriptor;
    for (std::size_t i = 1; i < desc.size() && desc[i] != ')';) {
        const std::size_t start = i;
        TypeWords(desc, i);
        switch (desc[start]) {
            case 'J': locals.push_back({4, 0}); break;
            case 'D': locals.push_back({3, 0}); break;
            case 'F': locals.push_back({2, 0}); break;
            case 'L': locals.push_back({7, pool.Class(desc.substr(start + 1, i - start - 2))}); break;
            case '[': locals.push_back({7, pool.Class(desc.substr(start, i - start))}); break;
            default: locals.push_back({1, 0}); break;  // I Z B C S
        }
    }
    return locals;
}

void PlanCoverage(const MethodCode &mc, const CoverageLayout &layout, std::uint32_t index, std::vector<VType> initial,
                  const ProbeRefs &refs, MethodEdit &edit) {
    if (layout.callsOnly()) {
        // The calls alone: push M; invokestatic <probes>.count(I)V, nothing else.
        edit.insertions.push_back({Placement::kMethodStart, 0, IntSize(index) + 3, 1, 0,
                                   [index, method = refs[Probe::kCount]](Writer &w, PoolAppender &pool) {
                                       EmitInt(w, index, pool);
                                       w.U1(kInvokestatic);
                                       w.U2(method);
                                   }});
        return;
    }
    const unsigned local = mc.code.maxLocals;
    if (local + 1 > 0xffff) throw SkipMethod("max_locals would exceed 65535 with the coverage counters");
    if (layout.Counters() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
        throw SkipMethod("too many coverage counters");
    }
    const auto size = static_cast<std::uint32_t>(layout.Counters());
    edit.reservedLocals = 1;
    edit.liveLocal = {local, VType{7, refs.longArray}, std::move(initial)};
    // The thread's counters, then (when counted) the entries' add.
    const std::uint32_t prologue = IntSize(index) + IntSize(size) + 3 + LocalSize(local);
    edit.insertions.push_back({Placement::kMethodStart, 0, prologue, 2, 1,
                               [=, method = refs[Probe::kCounters]](Writer &w, PoolAppender &pool) {
                                   EmitInt(w, index, pool);
                                   EmitInt(w, size, pool);
                                   w.U1(kInvokestatic);
                                   w.U2(method);
                                   EmitLocalOp(w, kAstore, kAstore0, local);
                               }});
    const auto add = [&](Placement place, std::uint32_t at, std::uint32_t k) {
        edit.insertions.push_back({place, at, AddSize(local, k), kAddStack, 1,
                                   [local, k](Writer &w, PoolAppender &pool) { EmitAdd(w, local, k, pool); }});
    };
    if (layout.entry != CoverageLayout::kNone) add(Placement::kMethodStart, 0, layout.entry);  // the calls
    for (std::uint32_t i = 0; i < layout.blocks.size(); ++i) {
        mc.At(layout.blocks[i], "coverage block");
        add(Placement::kBefore, layout.blocks[i], i);
    }
    for (const CoverageLayout::Branch &b : layout.branches) {
        const Insn &in = mc.At(b.offset, "coverage branch");
        if (!IsConditional(in.op)) throw FormatError("coverage branch " + std::to_string(in.off) + " is not one");
        if (b.ran != CoverageLayout::kNone) add(Placement::kBefore, in.off, static_cast<std::uint32_t>(b.ran));
        if (b.fell != CoverageLayout::kNone) add(Placement::kAfter, in.off, static_cast<std::uint32_t>(b.fell));
    }
    for (const CoverageLayout::Switch &sw : layout.switches) {
        mc.At(sw.offset, "coverage switch");
        if (sw.ran != CoverageLayout::kNone) add(Placement::kBefore, sw.offset, static_cast<std::uint32_t>(sw.ran));
    }
}

}  // namespace martini::jvm::detail
