#include "bytecode.h"

#include <initializer_list>
#include <map>

namespace martini::jvm::detail {

// ---- Descriptors ------------------------------------------------------------------

// Stack words of one field type at `i`, advancing `i`; 0 for V.
unsigned TypeWords(const std::string &d, std::size_t &i) {
    if (i >= d.size()) throw FormatError("bad descriptor " + d);
    switch (d[i]) {
        case 'J': case 'D': ++i; return 2;
        case 'V': ++i; return 0;
        case 'L': {
            const auto semi = d.find(';', i);
            if (semi == std::string::npos) throw FormatError("bad descriptor " + d);
            i = semi + 1;
            return 1;
        }
        case '[':
            while (i < d.size() && d[i] == '[') ++i;
            TypeWords(d, i);
            return 1;
        default: ++i; return 1;
    }
}

std::pair<unsigned, unsigned> MethodWords(const std::string &d) {  // {args, result}
    if (d.empty() || d[0] != '(') throw FormatError("bad method descriptor " + d);
    std::size_t i = 1;
    unsigned args = 0;
    while (i < d.size() && d[i] != ')') args += TypeWords(d, i);
    if (i >= d.size()) throw FormatError("bad method descriptor " + d);
    ++i;
    return {args, TypeWords(d, i)};
}

std::uint32_t FixedLength(std::uint8_t op) {
    static const std::uint8_t kLen[202] = {
        // 0x00-0x0f
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        // 0x10-0x1f: bipush sipush ldc ldc_w ldc2_w iload lload fload dload aload *load_n
        2, 3, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x20-0x2f
        1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1,  // 0x30-0x3f: ..store
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x40-0x4f
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x50-0x5f
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x60-0x6f
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x70-0x7f
        1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x80-0x8f: iinc
        1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3,  // 0x90-0x9f: if*
        3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 0, 0, 1, 1, 1, 1,  // 0xa0-0xaf: goto jsr ret switches returns
        1, 1, 3, 3, 3, 3, 3, 3, 3, 5, 5, 3, 2, 3, 1, 1,  // 0xb0-0xbf
        3, 3, 1, 1, 0, 4, 3, 3, 5, 5,                    // 0xc0-0xc9
    };
    return op < 202 ? kLen[op] : 0;
}

std::vector<Insn> Decode(std::span<const std::uint8_t> code) {
    std::vector<Insn> out;
    std::uint32_t off = 0;
    const auto size = static_cast<std::uint32_t>(code.size());
    while (off < size) {
        Insn in;
        in.off = off;
        in.op = code[off];
        Reader r(code, off + 1);
        if (in.op == kTableswitch || in.op == kLookupswitch) {
            r.Skip((4 - (off + 1) % 4) % 4);
            in.targets.push_back(off + std::int64_t{r.S4()});
            if (in.op == kTableswitch) {
                in.low = r.S4();
                const std::int32_t high = r.S4();
                if (high < in.low || std::int64_t{high} - in.low >= 65536) throw FormatError("bad tableswitch bounds");
                for (std::int64_t k = in.low; k <= high; ++k) in.targets.push_back(off + std::int64_t{r.S4()});
            } else {
                const std::int32_t n = r.S4();
                if (n < 0 || n > 65536) throw FormatError("bad lookupswitch size");
                for (std::int32_t k = 0; k < n; ++k) {
                    in.keys.push_back(r.S4());
                    in.targets.push_back(off + std::int64_t{r.S4()});
                }
            }
            in.len = static_cast<std::uint32_t>(r.pos()) - off;
        } else if (in.op == kWide) {
            const std::uint8_t inner = r.U1();
            in.len = inner == 0x84 ? 6 : 4;  // wide iinc / wide load-store-ret
            if (!((inner >= 0x15 && inner <= 0x19) || (inner >= 0x36 && inner <= 0x3a) || inner == 0xa9 ||
                  inner == 0x84)) {
                throw FormatError("bad opcode after wide at " + std::to_string(off));
            }
        } else {
            in.len = FixedLength(in.op);
            if (in.len == 0) throw FormatError("unknown opcode " + std::to_string(in.op) + " at " + std::to_string(off));
            if ((in.op >= kIfeq && in.op <= kJsr) || in.op == kIfnull || in.op == kIfnonnull) {
                r.Need(2);
                in.targets.push_back(off + std::int64_t{static_cast<std::int16_t>(r.U2())});
                in.branch16 = true;
            } else if (in.op == kGotoW || in.op == kJsrW) {
                in.targets.push_back(off + std::int64_t{r.S4()});
            }
        }
        if (std::uint64_t{off} + in.len > size) throw FormatError("instruction at " + std::to_string(off) + " runs past the code");
        out.push_back(std::move(in));
        off += out.back().len;
    }
    return out;
}

VType ReadVType(Reader &r) {
    VType v{r.U1(), 0};
    if (v.tag > 8) throw FormatError("bad verification type " + std::to_string(v.tag));
    if (v.tag == 7 || v.tag == 8) v.value = r.U2();
    return v;
}

std::vector<Frame> ReadFrames(const ParsedClass &pc, const Attribute &a) {
    Reader r(pc.data.subspan(0, a.body + a.length), a.body);
    std::vector<Frame> frames(r.U2());
    std::int64_t last = -1;
    for (auto &f : frames) {
        f.kind = r.U1();
        std::uint32_t delta = 0;
        if (f.kind <= 63) {
            delta = f.kind;
        } else if (f.kind <= 127) {
            delta = f.kind - 64u;
            f.stack.push_back(ReadVType(r));
        } else if (f.kind < 247) {
            throw FormatError("reserved stack map frame type " + std::to_string(f.kind));
        } else if (f.kind == 247) {
            delta = r.U2();
            f.stack.push_back(ReadVType(r));
        } else if (f.kind <= 250) {
            delta = r.U2();
            f.chop = static_cast<std::uint8_t>(251 - f.kind);
        } else if (f.kind == 251) {
            delta = r.U2();
        } else if (f.kind <= 254) {
            delta = r.U2();
            for (int k = 0; k < f.kind - 251; ++k) f.locals.push_back(ReadVType(r));
        } else {
            delta = r.U2();
            f.locals.resize(r.U2());
            for (auto &v : f.locals) v = ReadVType(r);
            f.stack.resize(r.U2());
            for (auto &v : f.stack) v = ReadVType(r);
        }
        last = last + delta + 1;  // the first frame's offset is its delta
        f.offset = static_cast<std::uint32_t>(last);
    }
    return frames;
}

void WriteVType(Writer &w, VType v, const std::function<std::uint32_t(std::uint32_t)> &newInsnOffset) {
    w.U1(v.tag);
    if (v.tag == 7) w.U2(v.value);
    if (v.tag == 8) w.U2(newInsnOffset(v.value));  // offset of a `new` instruction
}

// Stack words of a field reference's type.
unsigned TypeWordsOf(const ParsedClass &pc, std::uint16_t fieldref) {
    const std::string desc = pc.cp.NameAndType(fieldref).second;
    std::size_t i = 0;
    return TypeWords(desc, i);
}

// {words popped, words pushed} of the instructions FindThisInitialized does not
// handle itself (JVMS chapter 6; long and double take two words).
std::pair<unsigned, unsigned> SimpleEffect(std::uint8_t op, std::span<const std::uint8_t> code, std::uint32_t off) {
    auto wide2 = [](std::uint8_t o) { return o == 0x16 || o == 0x18 || o == 0x37 || o == 0x39; };  // l/d load/store
    if (op == kWide) {
        const std::uint8_t inner = code[off + 1];
        if (inner >= 0x15 && inner <= 0x19) return {0, wide2(inner) ? 2u : 1u};
        if (inner >= 0x36 && inner <= 0x3a) return {wide2(inner) ? 2u : 1u, 0};
        return {0, 0};  // iinc, ret
    }
    if (op == 0x00 || op == 0x84 || op == kGoto || op == 0xa9 || op == kGotoW) return {0, 0};
    if (op == 0x01 || (op >= 0x02 && op <= 0x08) || (op >= 0x0b && op <= 0x0d) || op == 0x10 || op == 0x11 ||
        op == 0x12 || op == 0x13 || op == 0x15 || op == 0x17 || op == 0x19 || (op >= 0x1a && op <= 0x1d) ||
        (op >= 0x22 && op <= 0x25) || (op >= 0x2a && op <= 0x2d) || op == 0xbb || op == kJsr || op == kJsrW) {
        return {0, 1};
    }
    if (op == 0x09 || op == 0x0a || op == 0x0e || op == 0x0f || op == 0x14 || op == 0x16 || op == 0x18 ||
        (op >= 0x1e && op <= 0x21) || (op >= 0x26 && op <= 0x29)) {
        return {0, 2};
    }
    switch (op) {
        case 0x2e: case 0x30: case 0x32: case 0x33: case 0x34: case 0x35: return {2, 1};  // x-aload
        case 0x2f: case 0x31: return {2, 2};                                              // l/daload
        case 0x36: case 0x38: case 0x3a: return {1, 0};
        case 0x37: case 0x39: return {2, 0};
        case 0x4f: case 0x51: case 0x53: case 0x54: case 0x55: case 0x56: return {3, 0};  // x-astore
        case 0x50: case 0x52: return {4, 0};
        case 0x57: return {1, 0};
        case 0x58: return {2, 0};
        case 0x74: case 0x76: return {1, 1};
        case 0x75: case 0x77: return {2, 2};
        case 0x79: case 0x7b: case 0x7d: return {3, 2};  // long shifts
        case 0x85: case 0x87: case 0x8c: case 0x8d: return {1, 2};
        case 0x86: case 0x8b: case 0x91: case 0x92: case 0x93: return {1, 1};
        case 0x88: case 0x89: case 0x8e: case 0x90: return {2, 1};
        case 0x8a: case 0x8f: return {2, 2};
        case 0x94: case 0x97: case 0x98: return {4, 1};
        case 0x95: case 0x96: return {2, 1};
        case kTableswitch: case kLookupswitch: case 0xc2: case 0xc3: case kIfnull: case kIfnonnull: case kAthrow:
            return {1, 0};
        case 0xbc: case 0xbd: case 0xbe: case 0xc0: case 0xc1: return {1, 1};
        default: break;
    }
    if (op >= 0x3b && op <= 0x4e) {  // x-store_n: l and d take two words
        const bool two = (op >= 0x3f && op <= 0x42) || (op >= 0x47 && op <= 0x4a);
        return {two ? 2u : 1u, 0};
    }
    if (op >= 0x60 && op <= 0x83) {  // arithmetic and logic: odd opcodes are long/double
        const bool two = (op & 1) != 0;
        return {two ? 4u : 2u, two ? 2u : 1u};
    }
    if (op >= 0x99 && op <= 0x9e) return {1, 0};
    if (op >= 0x9f && op <= 0xa6) return {2, 0};
    if (IsReturn(op)) return {0, 0};  // ends the flow; the next frame resynchronizes
    throw SkipMethod("unexpected opcode " + std::to_string(op) + " in a constructor");
}

// ---- Constructors: where does super()/this() initialize `this`? ------------------------

// Simulates the operand stack (one flag per word: "is uninitializedThis") from the
// method start, resynchronizing at every stack map frame, until the invokespecial
// <init> whose receiver is uninitializedThis. Returns that instruction's old offset.
std::optional<std::uint32_t> FindThisInitialized(const ParsedClass &pc, std::span<const std::uint8_t> code,
                                                 const std::vector<Insn> &insns, const std::vector<Frame> &frames) {
    std::map<std::uint32_t, const Frame *> frameAt;
    for (const auto &f : frames) frameAt[f.offset] = &f;
    std::vector<bool> st;  // operand stack words, true = uninitializedThis
    auto pop = [&](unsigned n) {
        if (n > st.size()) throw SkipMethod("constructor stack does not follow the bytecode");
        st.resize(st.size() - n);
    };
    auto push = [&](unsigned n, bool isThis = false) { st.insert(st.end(), n, isThis); };
    for (const Insn &in : insns) {
        if (auto f = frameAt.find(in.off); f != frameAt.end()) {
            // The frame's stack is exact here (same/chop/append frames have an empty stack).
            st.clear();
            for (const VType &v : f->second->stack) push(v.tag == 3 || v.tag == 4 ? 2 : 1, v.tag == 6);
        }
        const std::uint8_t op = in.op;
        Reader r(code, in.off + 1);
        switch (op) {
            case kAload0: push(1, true); break;
            case kAload: push(1, code[in.off + 1] == 0); break;
            case 0x59: {  // dup
                if (st.empty()) throw SkipMethod("stack underflow");
                st.push_back(st.back());
                break;
            }
            case 0x5a: case 0x5b: case 0x5c: case 0x5d: case 0x5e: case 0x5f: {  // dup_x1..swap
                const std::size_t need = op == 0x5a ? 2 : op == 0x5b ? 3 : op == 0x5c ? 2 : op == 0x5d ? 3 : op == 0x5e ? 4 : 2;
                if (st.size() < need) throw SkipMethod("stack underflow");
                std::vector<bool> top(st.end() - static_cast<std::ptrdiff_t>(need), st.end());
                st.resize(st.size() - need);
                auto add = [&](std::initializer_list<std::size_t> idx) {
                    for (std::size_t i : idx) st.push_back(top[i]);
                };
                // top[] is bottom-to-top: e.g. dup_x1 on [b, a] gives [a, b, a].
                if (op == 0x5a) add({1, 0, 1});
                if (op == 0x5b) add({2, 0, 1, 2});
                if (op == 0x5c) add({0, 1, 0, 1});
                if (op == 0x5d) add({1, 2, 0, 1, 2});
                if (op == 0x5e) add({2, 3, 0, 1, 2, 3});
                if (op == 0x5f) add({1, 0});
                break;
            }
            case 0xb6: case kInvokespecial: case kInvokestatic: case 0xb9: case 0xba: {
                const std::uint16_t idx = r.U2();
                const auto [name, desc] = pc.cp.NameAndType(idx);
                const auto [args, result] = MethodWords(desc);
                const unsigned receiver = op == kInvokestatic || op == 0xba ? 0 : 1;
                if (st.size() < args + receiver) throw SkipMethod("stack underflow at an invoke");
                const bool initsThis = op == kInvokespecial && name == "<init>" && st[st.size() - args - 1];
                pop(args + receiver);
                if (initsThis) return in.off;
                push(result);
                break;
            }
            case 0xb2: push(TypeWordsOf(pc, r.U2())); break;                    // getstatic
            case 0xb3: pop(TypeWordsOf(pc, r.U2())); break;                     // putstatic
            case 0xb4: pop(1); push(TypeWordsOf(pc, r.U2())); break;            // getfield
            case 0xb5: pop(1 + TypeWordsOf(pc, r.U2())); break;                 // putfield
            case 0xc5: pop(code[in.off + 3]); push(1); break;                   // multianewarray
            default: {
                const auto [pops, pushes] = SimpleEffect(op, code, in.off);
                pop(pops);
                push(pushes);
            }
        }
    }
    return std::nullopt;
}

std::string InvokeOwner(const ParsedClass &pc, std::span<const std::uint8_t> code, std::uint32_t off) {
    Reader r(code, off + 1);
    const std::uint16_t ref = r.U2();
    pc.cp.NameAndType(ref);  // checks that it is a member reference
    return pc.cp.ClassName(pc.cp.U2At(pc.cp.at[ref]));
}

bool WritesLocal0(std::span<const std::uint8_t> code, const std::vector<Insn> &insns) {
    for (const Insn &in : insns) {
        const std::uint8_t op = in.op;
        if (op == 0x3b || op == 0x3f || op == 0x43 || op == 0x47 || op == 0x4b) return true;  // x-store_0
        if ((op >= 0x36 && op <= 0x3a) || op == kIinc) {  // x-store index / iinc index const
            if (code[in.off + 1] == 0) return true;
        } else if (op == kWide) {
            const std::uint8_t inner = code[in.off + 1];
            const bool writes = (inner >= 0x36 && inner <= 0x3a) || inner == kIinc;
            if (writes && code[in.off + 2] == 0 && code[in.off + 3] == 0) return true;
        }
    }
    return false;
}

}  // namespace martini::jvm::detail
