// Class-file reader, probe insertion and writer. JVMS chapter 4 (format and
// verification) and chapter 6 (instructions) are the reference; comments say why
// where the format is subtle.
#include "instrumenter.h"

#include "bytecode.h"
#include "class_file.h"

#include <algorithm>
#include <limits>
#include <optional>


namespace martini::jvm {

namespace {

// Probe ids are pushed as Java ints: a selector's answer must be 0 .. 2^31-1.
constexpr bool ProbeIdFits(std::int64_t id) { return id >= 0 && id <= std::numeric_limits<std::int32_t>::max(); }

using namespace detail;

// ---- Rewriting one method -----------------------------------------------------------

struct ProbeRefs {
    std::uint16_t enter = 0, leave = 0, leaveExceptional = 0, throwable = 0;
};

struct AllocRefs {
    std::uint16_t method = 0;     // Probes.alloc, or Probes.allocByClassId before version 49
    std::uint16_t thisClass = 0;  // the class's own Class constant; 0: allocByClassId form
};

constexpr std::uint32_t kProbeSize = 6;    // push id (3) + invokestatic (3)
constexpr std::uint32_t kHandlerSize = 7;  // probe + athrow
// aload_0 (1) + ldc_w class (3) + push id (3) + invokestatic (3); without the class: 7.
constexpr std::uint32_t kAllocProbeSize = 10, kAllocProbeSizeNoClass = 7;
// Class files from version 49 may ldc a class constant (JVMS 4.4.1, ldc).
constexpr std::uint16_t kLdcClassVersion = 49;

struct SiteRefs {
    std::uint16_t interaction = 0, interactionStatic = 0;
    std::uint16_t allocArray = 0;  // Probes.allocArray(Ljava/lang/Object;I)V
};

// One array probe: after the allocation instruction at old offset `at`.
struct ArrayPlan {
    std::uint32_t at = 0;
    std::int32_t id = 0;
};
constexpr std::uint32_t kArrayProbeSize = 7;  // dup (1) + push id (3) + invokestatic (3)

// One site probe: before the call at old offset `at`.
struct SitePlan {
    std::uint32_t at = 0;
    std::int32_t id = 0;
    bool receiver = true;      // pass the receiver (not for the static sleep)
    std::string args;          // the call's parameter descriptors, "JI"; spilled to locals
};

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

unsigned SpillWords(const SitePlan &s) {
    unsigned words = 0;
    for (char c : s.args) words += LocalOpsFor(c).words;
    return s.receiver ? words : 0;
}

// Bytes of a site probe whose spilled arguments start at local `base`.
std::uint32_t SiteProbeSize(const SitePlan &s, unsigned base) {
    std::uint32_t size = 6;  // push id + invokestatic
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

void EmitSiteProbe(Writer &w, const SitePlan &s, unsigned base, const SiteRefs &refs, PoolAppender &pool);

// What to insert into one method.
struct Plan {
    std::optional<std::int32_t> call;   // enter/leave probe id
    std::optional<std::int32_t> alloc;  // class probe id, inserted before the instruction at allocAt
    std::uint32_t allocAt = 0;          // old offset of the instruction after super()
    std::optional<std::uint32_t> track; // an old instruction offset whose new offset is wanted
    std::vector<SitePlan> sites;        // in code order
    std::vector<ArrayPlan> arrays;      // in code order
};

struct Rewritten {
    std::vector<std::uint8_t> codeAttribute;
    std::int64_t tracked = -1;  // new offset of Plan::track
};

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

void EmitAllocProbe(Writer &w, std::int32_t id, const AllocRefs &refs, PoolAppender &pool) {
    w.U1(kAload0);
    if (refs.thisClass != 0) {
        w.U1(kLdcW);
        w.U2(refs.thisClass);
    }
    EmitProbe(w, id, refs.method, pool);
}

void EmitSiteProbe(Writer &w, const SitePlan &s, unsigned base, const SiteRefs &refs, PoolAppender &pool) {
    if (!s.receiver) {
        EmitProbe(w, s.id, refs.interactionStatic, pool);
        return;
    }
    // The arguments, last first, into locals base.. (the receiver is then on top).
    std::vector<unsigned> locals;
    unsigned local = base;
    for (char c : s.args) {
        locals.push_back(local);
        local += LocalOpsFor(c).words;
    }
    for (std::size_t k = s.args.size(); k-- > 0;) EmitLocal(w, LocalOpsFor(s.args[k]).store, locals[k]);
    w.U1(kDup);
    EmitProbe(w, s.id, refs.interaction, pool);
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

// The candidate call sites of a method's code, in code order.
std::vector<CallSite> FindCallSites(const ParsedClass &pc, const Code &code) {
    std::vector<CallSite> out;
    for (const Insn &in : Decode(code.bytes)) {
        if (in.op != kInvokevirtual && in.op != kInvokespecial && in.op != kInvokestatic) continue;
        const std::uint16_t ref = static_cast<std::uint16_t>(code.bytes[in.off + 1] << 8 | code.bytes[in.off + 2]);
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

// The array allocation instructions of a method's code, in code order.
std::vector<ArraySite> FindArraySites(const ParsedClass &pc, const Code &code) {
    std::vector<ArraySite> out;
    static const char kAtype[] = "????ZCFDBSIJ";  // newarray's atype 4..11
    for (const Insn &in : Decode(code.bytes)) {
        std::string desc;
        unsigned dims = 1;
        if (in.op == kNewarray) {
            const std::uint8_t t = code.bytes[in.off + 1];
            if (t < 4 || t > 11) throw FormatError("newarray with atype " + std::to_string(t));
            desc = std::string("[") + kAtype[t];
        } else if (in.op == kAnewarray || in.op == kMultianewarray) {
            const std::uint16_t ref = static_cast<std::uint16_t>(code.bytes[in.off + 1] << 8 | code.bytes[in.off + 2]);
            if (ref == 0 || ref >= pc.cp.tags.size() || pc.cp.tags[ref] != kClass) {
                throw FormatError("array allocation at " + std::to_string(in.off) + " names no class");
            }
            const std::string name = pc.cp.ClassName(ref);
            if (in.op == kAnewarray) {
                desc = "[" + (name.starts_with("[") ? name : "L" + name + ";");
            } else {
                desc = name;
                dims = code.bytes[in.off + 3];
            }
        } else {
            continue;
        }
        out.push_back({in.op, desc, ArraySourceName(desc), dims, in.off});
    }
    return out;
}

const Attribute *FindStackMap(const Code &code) {
    for (const auto &a : code.attrs) {
        if (a.name == "StackMapTable") return &a;
    }
    return nullptr;
}

// Where a constructor's super()/this() call is, and which of the two it is.
struct CtorShape {
    std::uint32_t initAt = 0;  // old offset of the invokespecial <init> on uninitializedThis
    bool delegates = false;    // this(...): a constructor of the same class
};

// Throws SkipMethod when the constructor cannot get an allocation probe safely.
CtorShape AnalyzeConstructor(const ParsedClass &pc, const Method &m) {
    const Code code = ReadCode(pc, m.attrs[static_cast<std::size_t>(m.code)]);
    const std::vector<Insn> insns = Decode(code.bytes);
    const Attribute *stackMap = FindStackMap(code);
    const std::vector<Frame> frames = stackMap ? ReadFrames(pc, *stackMap) : std::vector<Frame>{};
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

struct Handler {
    std::uint32_t oldStart, oldEnd;  // covered original code, [start, end)
    bool thisUninitialized;          // constructor code before super()/this()
    std::uint32_t newPc = 0;
};

Rewritten RewriteCode(const ParsedClass &pc, const Method &m, const MethodDecl &d, const Plan &plan,
                      PoolAppender &pool, const ProbeRefs &refs, const AllocRefs &allocRefs,
                      const SiteRefs &siteRefs) {
    const bool call = plan.call.has_value();
    const std::int32_t id = plan.call.value_or(0);
    const Attribute &codeAttr = m.attrs[static_cast<std::size_t>(m.code)];
    const Code code = ReadCode(pc, codeAttr);
    const auto len = static_cast<std::uint32_t>(code.bytes.size());
    const Attribute *stackMap = nullptr;
    for (const auto &a : code.attrs) {
        if (a.name == "StackMapTable") {
            stackMap = &a;
        } else if (a.name != "LineNumberTable" && a.name != "LocalVariableTable" &&
                   a.name != "LocalVariableTypeTable") {
            throw SkipMethod("its Code has a " + a.name + " attribute, whose offsets Martini does not rewrite");
        }
    }
    std::vector<Insn> insns = Decode(code.bytes);
    std::vector<std::int32_t> at(len + 1, -1);  // old offset -> instruction index
    for (std::size_t i = 0; i < insns.size(); ++i) at[insns[i].off] = static_cast<std::int32_t>(i);
    auto insnAt = [&](std::int64_t off, const char *what) -> Insn & {
        if (off < 0 || off >= len || at[static_cast<std::size_t>(off)] < 0) {
            throw FormatError(std::string(what) + " " + std::to_string(off) + " is not an instruction");
        }
        return insns[static_cast<std::size_t>(at[static_cast<std::size_t>(off)])];
    };
    for (const Insn &in : insns) {
        for (std::int64_t t : in.targets) insnAt(t, "branch target");
    }
    for (const auto &e : code.exceptions) {
        insnAt(e.start, "exception range start");
        insnAt(e.handler, "exception handler");
        if (e.end != len) insnAt(e.end, "exception range end");
    }
    const std::vector<Frame> frames = stackMap ? ReadFrames(pc, *stackMap) : std::vector<Frame>{};
    for (const Frame &f : frames) insnAt(f.offset, "stack map frame offset");
    const bool needFrames = pc.major >= 50;

    // Catch-all handlers. Before super()/this() `this` is uninitializedThis, and a
    // handler's stack map frame must carry that flag (JVMS 4.10.1.4), so constructors
    // get one handler for that part and one for the rest. The invokespecial <init>
    // itself cannot be covered: after it `this` is initialized while the verifier
    // still holds the flag, which no stack map frame expresses (HotSpot rejects it,
    // and javac never emits it). An exception thrown by the super constructor itself
    // therefore escapes the probe; the agent's shadow stack repairs the pairing.
    std::vector<Handler> handlers;
    if (!call) {
        // Allocation probe only: no enter/leave, no handlers.
    } else if (d.name == "<init>") {
        const std::optional<std::uint32_t> init = FindThisInitialized(pc, code.bytes, insns, frames);
        const std::uint32_t split = init.value_or(len);
        // Class files before version 50 are verified by type inference, which does not
        // allow a handler over code where `this` is uninitialized: cover the rest only.
        if (needFrames) handlers.push_back({0, split, true});
        if (init) handlers.push_back({split + 3, len, false});
    } else {
        handlers.push_back({0, len, false});
    }

    if (plan.alloc) insnAt(plan.allocAt, "allocation probe position");
    // Site probes: their spilled arguments go to new locals past max_locals.
    const unsigned spillBase = code.maxLocals;
    unsigned spillWords = 0;
    std::vector<std::int32_t> siteOf(insns.size(), -1);  // instruction index -> plan.sites index
    for (std::size_t k = 0; k < plan.sites.size(); ++k) {
        Insn &in = insnAt(plan.sites[k].at, "call site");
        if (in.op != kInvokevirtual && in.op != kInvokespecial && in.op != kInvokestatic) {
            throw FormatError("call site " + std::to_string(in.off) + " is not an invoke");
        }
        siteOf[static_cast<std::size_t>(&in - insns.data())] = static_cast<std::int32_t>(k);
        spillWords = std::max(spillWords, SpillWords(plan.sites[k]));
    }
    if (spillBase + spillWords > 0xffff) throw SkipMethod("max_locals would exceed 65535 with the spilled arguments");
    // Array probes: inserted before the instruction after the allocation.
    std::vector<std::int32_t> arrayAfter(insns.size(), -1);  // instruction index -> plan.arrays index
    for (std::size_t k = 0; k < plan.arrays.size(); ++k) {
        const Insn &in = insnAt(plan.arrays[k].at, "array allocation");
        if (in.op != kNewarray && in.op != kAnewarray && in.op != kMultianewarray) {
            throw FormatError("array allocation " + std::to_string(in.off) + " is not one");
        }
        const auto next = static_cast<std::size_t>(&in - insns.data()) + 1;
        if (next >= insns.size()) throw SkipMethod("the code ends at an array allocation");
        arrayAfter[next] = static_cast<std::int32_t>(k);
    }
    const std::uint32_t allocSize = allocRefs.thisClass != 0 ? kAllocProbeSize : kAllocProbeSizeNoClass;

    // Layout: probes go before every return; branches to a return go to its probe. The
    // allocation probe goes before the instruction after super(), ahead of a leave probe
    // there; branches to that instruction skip it (only the fall-through from super()
    // runs it).
    auto targetNew = [&](std::int64_t off) -> std::uint32_t {
        const Insn &in = insnAt(off, "target");
        return in.newOff - in.probeBefore - in.siteBefore;
    };
    // Where Martini's own handler ranges start: the allocation probe is covered too.
    auto handlerStartNew = [&](std::int64_t off) -> std::uint32_t {
        const Insn &in = insnAt(off, "handler range start");
        return in.newOff - in.probeBefore - in.siteBefore - in.allocBefore;
    };
    auto rangeEnd = [&](std::uint32_t off, std::uint32_t codeEnd) { return off == len ? codeEnd : targetNew(off); };
    std::uint32_t codeEnd = 0;
    for (bool again = true; again;) {
        again = false;
        std::uint32_t pos = call ? kProbeSize : 0;
        for (Insn &in : insns) {
            in.arrayBefore = arrayAfter[static_cast<std::size_t>(&in - insns.data())] >= 0 ? kArrayProbeSize : 0;
            pos += in.arrayBefore;
            in.allocBefore = plan.alloc && in.off == plan.allocAt ? allocSize : 0;
            pos += in.allocBefore;
            in.probeBefore = call && IsReturn(in.op) ? kProbeSize : 0;
            pos += in.probeBefore;
            const std::int32_t site = siteOf[static_cast<std::size_t>(&in - insns.data())];
            in.siteBefore = site < 0 ? 0 : SiteProbeSize(plan.sites[static_cast<std::size_t>(site)], spillBase);
            pos += in.siteBefore;
            in.newOff = pos;
            if (in.op == kTableswitch || in.op == kLookupswitch) {
                const std::uint32_t oldPad = (4 - (in.off + 1) % 4) % 4, newPad = (4 - (pos + 1) % 4) % 4;
                in.newLen = in.len - oldPad + newPad;
            } else {
                in.newLen = in.widen ? 5 : in.len;
            }
            pos += in.newLen;
        }
        codeEnd = pos;
        for (Insn &in : insns) {
            if (!in.branch16 || in.widen) continue;
            const std::int64_t delta = std::int64_t{targetNew(in.targets[0])} - in.newOff;
            if (delta >= -32768 && delta <= 32767) continue;
            if (in.op != kGoto && in.op != kJsr) {
                throw SkipMethod("a conditional branch would no longer reach its target (method too large)");
            }
            in.widen = true;  // goto -> goto_w, jsr -> jsr_w: no new stack map frame needed
            again = true;
        }
    }
    const std::uint64_t total = std::uint64_t{codeEnd} + kHandlerSize * handlers.size();
    if (total > 65535) throw SkipMethod("the instrumented code would exceed the 64 KiB code limit");
    // The counts and max_stack below are u2s; one more would wrap around. A call probe
    // pushes one word (a handler two: the exception and the id); the allocation probe
    // three, on top of whatever the stack holds after super().
    // A site probe two (dup, id), after its arguments were spilled.
    // An array probe two (dup, id) on top of the new array.
    const unsigned extraStack =
        std::max({plan.alloc ? 3u : 1u, plan.sites.empty() ? 0u : 2u, plan.arrays.empty() ? 0u : 2u});
    if (code.maxStack + extraStack > 0xffff) {
        throw SkipMethod("max_stack is " + std::to_string(code.maxStack) + "; the probes need " +
                         std::to_string(extraStack) + " more words");
    }
    if (code.exceptions.size() + handlers.size() > 0xffff) throw SkipMethod("the exception table would exceed 65535 entries");
    // A method without a StackMapTable needs one only for the handlers' frames.
    const bool addStackMap = needFrames && stackMap == nullptr && !handlers.empty();
    if (code.attrs.size() + 1 > 0xffff && addStackMap) {
        throw SkipMethod("a StackMapTable would make more than 65535 Code attributes");
    }

    // Code.
    Writer c;
    if (call) EmitProbe(c, id, refs.enter, pool);
    for (const Insn &in : insns) {
        if (in.arrayBefore != 0) {
            const ArrayPlan &a = plan.arrays[static_cast<std::size_t>(arrayAfter[static_cast<std::size_t>(&in - insns.data())])];
            c.U1(kDup);
            EmitProbe(c, a.id, siteRefs.allocArray, pool);
        }
        if (in.allocBefore != 0) EmitAllocProbe(c, *plan.alloc, allocRefs, pool);
        if (in.probeBefore != 0) EmitProbe(c, id, refs.leave, pool);
        if (in.siteBefore != 0) {
            const std::size_t before = c.size();
            EmitSiteProbe(c, plan.sites[static_cast<std::size_t>(siteOf[static_cast<std::size_t>(&in - insns.data())])],
                          spillBase, siteRefs, pool);
            if (c.size() - before != in.siteBefore) throw std::logic_error("site probe size");
        }
        const auto rel = [&](std::int64_t target) {
            return static_cast<std::uint32_t>(static_cast<std::int32_t>(std::int64_t{targetNew(target)} - in.newOff));
        };
        if (in.op == kTableswitch || in.op == kLookupswitch) {
            c.U1(in.op);
            while ((c.size()) % 4 != 0) c.U1(0);
            c.U4(rel(in.targets[0]));
            if (in.op == kTableswitch) {
                c.U4(static_cast<std::uint32_t>(in.low));
                // high = low + (entries - 1); targets holds the default and the entries.
                c.U4(static_cast<std::uint32_t>(in.low + static_cast<std::int32_t>(in.targets.size() - 2)));
                for (std::size_t k = 1; k < in.targets.size(); ++k) c.U4(rel(in.targets[k]));
            } else {
                c.U4(static_cast<std::uint32_t>(in.keys.size()));
                for (std::size_t k = 0; k < in.keys.size(); ++k) {
                    c.U4(static_cast<std::uint32_t>(in.keys[k]));
                    c.U4(rel(in.targets[k + 1]));
                }
            }
        } else if (in.branch16 && in.widen) {
            c.U1(in.op == kGoto ? kGotoW : kJsrW);
            c.U4(rel(in.targets[0]));
        } else if (in.branch16) {
            c.U1(in.op);
            c.U2(rel(in.targets[0]) & 0xffff);
        } else if (in.op == kGotoW || in.op == kJsrW) {
            c.U1(in.op);
            c.U4(rel(in.targets[0]));
        } else {
            c.Bytes(code.bytes.subspan(in.off, in.len));
        }
    }
    for (Handler &h : handlers) {
        h.newPc = static_cast<std::uint32_t>(c.size());
        EmitProbe(c, id, refs.leaveExceptional, pool);
        c.U1(kAthrow);
    }

    // The Code attribute.
    Writer w;
    w.U2(codeAttr.nameIndex);
    const std::size_t lengthAt = w.size();
    w.U4(0);
    w.U2(std::max<unsigned>(code.maxStack + extraStack, call ? 2u : 0u));
    w.U2(spillBase + spillWords);
    w.U4(static_cast<std::uint32_t>(c.size()));
    w.Bytes(c.out);
    std::size_t ranges = 0;
    for (const Handler &h : handlers) ranges += h.oldStart < h.oldEnd ? 1 : 0;
    w.U2(static_cast<unsigned>(code.exceptions.size() + ranges));
    for (const auto &e : code.exceptions) {  // the program's own handlers keep priority
        w.U2(targetNew(e.start));
        w.U2(rangeEnd(e.end, codeEnd));
        w.U2(targetNew(e.handler));
        w.U2(e.catchType);
    }
    for (const Handler &h : handlers) {
        if (h.oldStart >= h.oldEnd) continue;
        w.U2(handlerStartNew(h.oldStart));  // old 0 maps after the enter probe
        w.U2(rangeEnd(h.oldEnd, codeEnd));
        w.U2(h.newPc);
        w.U2(0);  // any Throwable
    }

    w.U2(static_cast<unsigned>(code.attrs.size() + (addStackMap ? 1 : 0)));
    auto newInsnOffset = [&](std::uint32_t off) { return insnAt(off, "Uninitialized(offset)").newOff; };
    auto writeFrames = [&](std::uint16_t nameIndex) {
        Writer f;
        std::vector<Frame> all = frames;
        for (Frame &fr : all) fr.offset = targetNew(fr.offset);
        for (const Handler &h : handlers) {
            if (h.oldStart >= h.oldEnd) continue;
            Frame hf;
            hf.kind = 255;
            hf.offset = h.newPc;
            if (h.thisUninitialized) hf.locals.push_back({6, 0});
            hf.stack.push_back({7, refs.throwable});
            all.push_back(hf);
        }
        f.U2(static_cast<unsigned>(all.size()));
        std::int64_t prev = -1;
        for (const Frame &fr : all) {
            const auto delta = static_cast<std::uint32_t>(std::int64_t{fr.offset} - prev - 1);
            prev = fr.offset;
            if (fr.kind <= 63 || fr.kind == 251) {
                if (delta <= 63) {
                    f.U1(delta);
                } else {
                    f.U1(251);
                    f.U2(delta);
                }
            } else if (fr.kind <= 127 || fr.kind == 247) {
                if (delta <= 63) {
                    f.U1(64 + delta);
                } else {
                    f.U1(247);
                    f.U2(delta);
                }
                WriteVType(f, fr.stack[0], newInsnOffset);
            } else if (fr.kind <= 250) {
                f.U1(fr.kind);
                f.U2(delta);
            } else if (fr.kind <= 254) {
                f.U1(fr.kind);
                f.U2(delta);
                for (const VType &v : fr.locals) WriteVType(f, v, newInsnOffset);
            } else {
                f.U1(255);
                f.U2(delta);
                f.U2(static_cast<unsigned>(fr.locals.size()));
                for (const VType &v : fr.locals) WriteVType(f, v, newInsnOffset);
                f.U2(static_cast<unsigned>(fr.stack.size()));
                for (const VType &v : fr.stack) WriteVType(f, v, newInsnOffset);
            }
        }
        w.U2(nameIndex);
        w.U4(static_cast<std::uint32_t>(f.size()));
        w.Bytes(f.out);
    };
    for (const auto &a : code.attrs) {
        Reader r(pc.data.subspan(0, a.body + a.length), a.body);
        if (a.name == "StackMapTable") {
            if (needFrames) {
                writeFrames(a.nameIndex);
            } else {
                w.Bytes(pc.data.subspan(a.start, a.body + a.length - a.start));
            }
        } else if (a.name == "LineNumberTable") {
            w.U2(a.nameIndex);
            w.U4(a.length);
            const std::uint16_t n = r.U2();
            w.U2(n);
            for (unsigned i = 0; i < n; ++i) {
                const std::uint16_t start = r.U2(), line = r.U2();
                // Line 0 keeps the enter probe on the method's first line.
                w.U2(start == 0 ? 0 : targetNew(start));
                w.U2(line);
            }
        } else {  // LocalVariableTable / LocalVariableTypeTable: {start, length, name, type, index}
            w.U2(a.nameIndex);
            w.U4(a.length);
            const std::uint16_t n = r.U2();
            w.U2(n);
            for (unsigned i = 0; i < n; ++i) {
                const std::uint16_t start = r.U2(), length = r.U2();
                const std::uint32_t newStart = start == 0 ? 0 : targetNew(start);
                const std::uint32_t end = std::uint32_t{start} + length;
                if (end > len || (end != len && at[end] < 0)) throw SkipMethod("a local variable range does not end on an instruction");
                const std::uint32_t newEnd = rangeEnd(end, codeEnd);
                w.U2(newStart);
                w.U2(newEnd - newStart);
                w.Bytes(r.Bytes(6));
            }
        }
    }
    if (addStackMap) writeFrames(pool.Utf8("StackMapTable"));
    w.PatchU4(lengthAt, static_cast<std::uint32_t>(w.size() - lengthAt - 4));
    Rewritten out;
    out.codeAttribute = std::move(w.out);
    if (plan.track) out.tracked = insnAt(*plan.track, "tracked offset").newOff;
    return out;
}

}  // namespace

// ---- Public ------------------------------------------------------------------------

InstrumentResult ParseClass(std::span<const std::uint8_t> classBytes) {
    InstrumentResult result;
    try {
        result.decl = Parse(classBytes).decl;
        result.parsed = true;
    } catch (const std::exception &e) {
        result.error = e.what();
    }
    return result;
}

InstrumentResult InstrumentClass(std::span<const std::uint8_t> classBytes, const ProbeSelector &select,
                                 const ProbeNames &probes) {
    return InstrumentClass(classBytes, select, AllocSelector{}, probes);
}

InstrumentResult InstrumentClass(std::span<const std::uint8_t> classBytes, const ProbeSelector &select,
                                 const AllocSelector &alloc, const ProbeNames &probes) {
    return InstrumentClass(classBytes, select, alloc, SiteSelector{}, probes);
}

InstrumentResult InstrumentClass(std::span<const std::uint8_t> classBytes, const ProbeSelector &select,
                                 const AllocSelector &alloc, const SiteSelector &sites, const ProbeNames &probes) {
    return InstrumentClass(classBytes, select, alloc, sites, ArraySelector{}, probes);
}

InstrumentResult InstrumentClass(std::span<const std::uint8_t> classBytes, const ProbeSelector &select,
                                 const AllocSelector &alloc, const SiteSelector &sites, const ArraySelector &arrays,
                                 const ProbeNames &probes) {
    InstrumentResult result;
    ParsedClass pc;
    try {
        pc = Parse(classBytes);
    } catch (const std::exception &e) {
        result.error = e.what();
        return result;
    }
    result.parsed = true;
    result.decl = pc.decl;
    if (pc.decl.internalName == probes.owner) return result;  // never probe the probes

    try {
        PoolAppender pool(pc.cp);
        std::optional<ProbeRefs> refs;
        std::optional<AllocRefs> allocRefs;
        std::optional<SiteRefs> siteRefs;
        std::vector<std::vector<std::uint8_t>> newCode(pc.methods.size());

        // Allocation probes: only classes that can have instances of their own, and
        // have a constructor (java/lang/Object has no super() to put the probe after).
        std::int64_t allocId = kNoProbe;
        const bool instantiable = (pc.decl.accessFlags & (kAccInterface | kAccAbstract)) == 0 &&
                                  !pc.decl.superName.empty();
        const bool hasConstructor = std::any_of(pc.decl.methods.begin(), pc.decl.methods.end(),
                                                [](const MethodDecl &d) { return d.hasCode && d.name == "<init>"; });
        if (alloc && instantiable && hasConstructor) {
            allocId = alloc(pc.decl);
            if (allocId != kNoProbe && !ProbeIdFits(allocId)) {
                result.allocSkipped.push_back(pc.decl.internalName + ": class probe id out of range");
                allocId = kNoProbe;
            }
            if (allocId != kNoProbe) result.delegationOffsets.assign(pc.methods.size(), -1);
        }

        for (std::size_t i = 0; i < pc.methods.size(); ++i) {
            const MethodDecl &d = pc.decl.methods[i];
            if (!d.hasCode) continue;
            const std::string signature = d.name + d.descriptor;
            Plan plan;
            if (select) {
                const std::int64_t id = select(pc.decl, d);
                if (id != kNoProbe && !ProbeIdFits(id)) {
                    result.skipped.push_back(signature + ": probe id out of range");
                } else if (id != kNoProbe) {
                    plan.call = static_cast<std::int32_t>(id);
                }
            }
            if (allocId != kNoProbe && d.name == "<init>") {
                try {
                    const CtorShape shape = AnalyzeConstructor(pc, pc.methods[i]);
                    if (shape.delegates) {
                        result.delegationOffsets[i] = shape.initAt;  // moves if the method is rewritten
                        plan.track = shape.initAt;
                    } else {
                        plan.alloc = static_cast<std::int32_t>(allocId);
                        plan.allocAt = shape.initAt + 3;
                    }
                } catch (const SkipMethod &e) {
                    result.allocSkipped.push_back(signature + ": " + e.what());
                }
            }
            // Site and array probes look at the original code (read once for both).
            const Code code = sites || arrays
                                  ? ReadCode(pc, pc.methods[i].attrs[static_cast<std::size_t>(pc.methods[i].code)])
                                  : Code{};
            if (sites) {
                for (const CallSite &site : FindCallSites(pc, code)) {
                    const std::int64_t sid = sites(pc.decl, d, site);
                    if (sid == kNoProbe) continue;
                    if (!ProbeIdFits(sid)) {
                        result.sitesSkipped.push_back(signature + ": site probe id out of range");
                        continue;
                    }
                    SitePlan sp;
                    sp.at = site.offset;
                    sp.id = static_cast<std::int32_t>(sid);
                    sp.receiver = site.opcode != kInvokestatic;
                    sp.args = ParamChars(site.descriptor);
                    plan.sites.push_back(std::move(sp));
                }
            }
            if (arrays) {
                for (const ArraySite &site : FindArraySites(pc, code)) {
                    const std::int64_t aid = arrays(pc.decl, d, site);
                    if (aid == kNoProbe) continue;
                    if (!ProbeIdFits(aid)) {
                        result.arraysSkipped.push_back(signature + ": array site id out of range");
                        continue;
                    }
                    plan.arrays.push_back({site.offset, static_cast<std::int32_t>(aid)});
                }
            }
            if (!plan.call && !plan.alloc && plan.sites.empty() && plan.arrays.empty()) continue;
            try {
                if (plan.call && !refs) {
                    ProbeRefs r;
                    r.enter = pool.Methodref(probes.owner, probes.enter, "(I)V");
                    r.leave = pool.Methodref(probes.owner, probes.leave, "(I)V");
                    r.leaveExceptional = pool.Methodref(probes.owner, probes.leaveExceptional, "(I)V");
                    r.throwable = pool.Class("java/lang/Throwable");
                    refs = r;
                }
                if (plan.alloc && !allocRefs) {
                    AllocRefs r;
                    if (pc.major >= kLdcClassVersion) {
                        r.method = pool.Methodref(probes.owner, probes.alloc, "(Ljava/lang/Object;Ljava/lang/Class;I)V");
                        r.thisClass = pc.thisClass;
                    } else {
                        r.method = pool.Methodref(probes.owner, probes.allocByClassId, "(Ljava/lang/Object;I)V");
                    }
                    allocRefs = r;
                }
                if (!plan.sites.empty() && (!siteRefs || siteRefs->interaction == 0)) {
                    SiteRefs r = siteRefs.value_or(SiteRefs{});
                    r.interaction = pool.Methodref(probes.owner, probes.interaction, "(Ljava/lang/Object;I)V");
                    r.interactionStatic = pool.Methodref(probes.owner, probes.interactionStatic, "(I)V");
                    siteRefs = r;
                }
                if (!plan.arrays.empty() && (!siteRefs || siteRefs->allocArray == 0)) {
                    SiteRefs r = siteRefs.value_or(SiteRefs{});
                    r.allocArray = pool.Methodref(probes.owner, probes.allocArray, "(Ljava/lang/Object;I)V");
                    siteRefs = r;
                }
                Rewritten rw = RewriteCode(pc, pc.methods[i], d, plan, pool, refs.value_or(ProbeRefs{}),
                                           allocRefs.value_or(AllocRefs{}), siteRefs.value_or(SiteRefs{}));
                newCode[i] = std::move(rw.codeAttribute);
                if (plan.track) result.delegationOffsets[i] = rw.tracked;
                if (plan.call) ++result.instrumented;
                if (plan.alloc) ++result.allocProbed;
                result.sitesProbed += static_cast<unsigned>(plan.sites.size());
                result.arraysProbed += static_cast<unsigned>(plan.arrays.size());
            } catch (const SkipMethod &e) {
                if (plan.call) result.skipped.push_back(signature + ": " + e.what());
                if (plan.alloc) result.allocSkipped.push_back(signature + ": " + e.what());
                if (!plan.sites.empty()) result.sitesSkipped.push_back(signature + ": " + e.what());
                if (!plan.arrays.empty()) result.arraysSkipped.push_back(signature + ": " + e.what());
            }
        }
        if (result.instrumented == 0 && result.allocProbed == 0 && result.sitesProbed == 0 && result.arraysProbed == 0) {
            return result;
        }

        Writer w;
        w.Bytes(classBytes.subspan(0, 8));  // magic, minor, major
        w.U2(pool.count());
        w.Bytes(classBytes.subspan(pc.cp.begin, pc.cp.end - pc.cp.begin));
        w.Bytes(pool.bytes());
        const std::size_t afterMethods = pc.methods.empty() ? pc.methodsCountAt + 2 : pc.methods.back().end;
        w.Bytes(classBytes.subspan(pc.cp.end, pc.methodsCountAt + 2 - pc.cp.end));
        for (std::size_t i = 0; i < pc.methods.size(); ++i) {
            const Method &m = pc.methods[i];
            if (newCode[i].empty()) {
                w.Bytes(classBytes.subspan(m.start, m.end - m.start));
                continue;
            }
            const Attribute &a = m.attrs[static_cast<std::size_t>(m.code)];
            w.Bytes(classBytes.subspan(m.start, a.start - m.start));
            w.Bytes(newCode[i]);
            w.Bytes(classBytes.subspan(a.body + a.length, m.end - (a.body + a.length)));
        }
        w.Bytes(classBytes.subspan(afterMethods));
        result.bytes = std::move(w.out);
        result.changed = true;
    } catch (const std::exception &e) {
        // A malformed method body (FormatError) or a failing selector: leave the class alone.
        result.parsed = false;
        result.changed = false;
        result.instrumented = 0;
        result.allocProbed = 0;
        result.sitesProbed = 0;
        result.arraysProbed = 0;
        result.delegationOffsets.clear();
        result.bytes.clear();
        result.error = e.what();
    }
    return result;
}

}  // namespace martini::jvm

