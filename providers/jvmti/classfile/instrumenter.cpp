// Class-file reader, probe insertion and writer. JVMS chapter 4 (format and
// verification) and chapter 6 (instructions) are the reference; comments say why
// where the format is subtle.
#include "instrumenter.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

namespace martini::jvm {

namespace {

// A malformed class: the message says where.
struct FormatError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// A method that cannot be rewritten safely: it is left alone.
struct SkipMethod : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// ---- Bytes -----------------------------------------------------------------------

class Reader {
public:
    Reader(std::span<const std::uint8_t> data, std::size_t pos = 0) : data_(data), pos_(pos) {}
    std::size_t pos() const { return pos_; }
    void Need(std::size_t n) const {
        if (n > data_.size() - pos_) throw FormatError("truncated at byte " + std::to_string(pos_));
    }
    std::uint8_t U1() {
        Need(1);
        return data_[pos_++];
    }
    std::uint16_t U2() {
        Need(2);
        const auto v = static_cast<std::uint16_t>(data_[pos_] << 8 | data_[pos_ + 1]);
        pos_ += 2;
        return v;
    }
    std::uint32_t U4() {
        const std::uint32_t hi = U2();
        return hi << 16 | U2();
    }
    std::int32_t S4() { return static_cast<std::int32_t>(U4()); }
    std::span<const std::uint8_t> Bytes(std::size_t n) {
        Need(n);
        auto s = data_.subspan(pos_, n);
        pos_ += n;
        return s;
    }
    void Skip(std::size_t n) { Bytes(n); }

private:
    std::span<const std::uint8_t> data_;
    std::size_t pos_;
};

class Writer {
public:
    std::vector<std::uint8_t> out;
    std::size_t size() const { return out.size(); }
    void U1(unsigned v) { out.push_back(static_cast<std::uint8_t>(v)); }
    void U2(unsigned v) {
        U1(v >> 8);
        U1(v & 0xff);
    }
    void U4(std::uint32_t v) {
        U2(v >> 16);
        U2(v & 0xffff);
    }
    void Bytes(std::span<const std::uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); }
    void PatchU2(std::size_t at, unsigned v) {
        out[at] = static_cast<std::uint8_t>(v >> 8);
        out[at + 1] = static_cast<std::uint8_t>(v);
    }
    void PatchU4(std::size_t at, std::uint32_t v) {
        PatchU2(at, v >> 16);
        PatchU2(at + 2, v & 0xffff);
    }
};

// ---- Constant pool -----------------------------------------------------------------

enum CpTag : std::uint8_t {
    kUtf8 = 1, kInteger = 3, kFloat = 4, kLong = 5, kDouble = 6, kClass = 7, kString = 8,
    kFieldref = 9, kMethodref = 10, kInterfaceMethodref = 11, kNameAndType = 12,
    kMethodHandle = 15, kMethodType = 16, kDynamic = 17, kInvokeDynamic = 18, kModule = 19, kPackage = 20,
};

struct ConstantPool {
    std::span<const std::uint8_t> data;  // the whole class
    std::vector<std::uint8_t> tags;      // index -> tag (0: unusable slot)
    std::vector<std::size_t> at;         // index -> offset of the entry's body (after the tag)
    std::size_t begin = 0, end = 0;      // the entries' bytes in `data`

    std::uint16_t count() const { return static_cast<std::uint16_t>(tags.size()); }
    std::uint16_t U2At(std::size_t off) const { return static_cast<std::uint16_t>(data[off] << 8 | data[off + 1]); }
    void Expect(std::uint16_t i, std::uint8_t tag) const {
        if (i == 0 || i >= tags.size() || tags[i] != tag) {
            throw FormatError("constant #" + std::to_string(i) + " is not of the expected kind");
        }
    }
    std::string Utf8(std::uint16_t i) const {
        Expect(i, kUtf8);
        const std::uint16_t n = U2At(at[i]);
        // Modified UTF-8; names and descriptors are compared and copied as bytes.
        return std::string(reinterpret_cast<const char *>(data.data() + at[i] + 2), n);
    }
    std::string ClassName(std::uint16_t i) const {
        Expect(i, kClass);
        return Utf8(U2At(at[i]));
    }
    // Name and descriptor of a member reference or an InvokeDynamic entry.
    std::pair<std::string, std::string> NameAndType(std::uint16_t i) const {
        if (i == 0 || i >= tags.size()) throw FormatError("constant #" + std::to_string(i) + " out of range");
        const std::uint8_t t = tags[i];
        if (t != kMethodref && t != kInterfaceMethodref && t != kFieldref && t != kInvokeDynamic && t != kDynamic) {
            throw FormatError("constant #" + std::to_string(i) + " is not a member reference");
        }
        const std::uint16_t nat = U2At(at[i] + 2);
        Expect(nat, kNameAndType);
        return {Utf8(U2At(at[nat])), Utf8(U2At(at[nat] + 2))};
    }
    // The Utf8 entry equal to `s`, or 0.
    std::uint16_t FindUtf8(std::string_view s) const {
        for (std::uint16_t i = 1; i < tags.size(); ++i) {
            if (tags[i] == kUtf8 && U2At(at[i]) == s.size() &&
                std::equal(s.begin(), s.end(), data.begin() + static_cast<std::ptrdiff_t>(at[i] + 2))) {
                return i;
            }
        }
        return 0;
    }
};

ConstantPool ReadConstantPool(Reader &r, std::span<const std::uint8_t> data) {
    ConstantPool cp;
    cp.data = data;
    const std::uint16_t count = r.U2();
    if (count == 0) throw FormatError("constant pool count is 0");
    cp.tags.assign(count, 0);
    cp.at.assign(count, 0);
    cp.begin = r.pos();
    for (std::uint16_t i = 1; i < count; ++i) {
        const std::uint8_t tag = r.U1();
        cp.tags[i] = tag;
        cp.at[i] = r.pos();
        switch (tag) {
            case kUtf8: r.Skip(r.U2()); break;
            case kInteger: case kFloat: case kFieldref: case kMethodref: case kInterfaceMethodref:
            case kNameAndType: case kDynamic: case kInvokeDynamic: r.Skip(4); break;
            case kLong: case kDouble:
                // Its second slot must exist too, or appended entries would be misnumbered.
                if (i + 1 >= count) throw FormatError("constant #" + std::to_string(i) + " takes two slots but is the last");
                r.Skip(8);
                ++i;  // takes two slots (JVMS 4.4.5)
                break;
            case kClass: case kString: case kMethodType: case kModule: case kPackage: r.Skip(2); break;
            case kMethodHandle: r.Skip(3); break;
            default:
                throw FormatError("constant #" + std::to_string(i) + " has unknown tag " + std::to_string(tag));
        }
    }
    cp.end = r.pos();
    return cp;
}

// Entries appended to the pool by the rewrite. Existing indexes never move.
class PoolAppender {
public:
    explicit PoolAppender(const ConstantPool &cp) : cp_(cp), next_(cp.count()) {}
    std::uint16_t Utf8(const std::string &s) {
        if (auto it = utf8_.find(s); it != utf8_.end()) return it->second;
        std::uint16_t existing = cp_.FindUtf8(s);
        if (existing != 0) return utf8_[s] = existing;
        // Take() before writing: when the pool is full, no uncounted bytes are left behind.
        const std::uint16_t index = Take(1);
        w_.U1(kUtf8);
        w_.U2(static_cast<unsigned>(s.size()));
        w_.Bytes({reinterpret_cast<const std::uint8_t *>(s.data()), s.size()});
        return utf8_[s] = index;
    }
    std::uint16_t Class(const std::string &internalName) {
        if (auto it = classes_.find(internalName); it != classes_.end()) return it->second;
        const std::uint16_t name = Utf8(internalName);
        const std::uint16_t index = Take(1);
        w_.U1(kClass);
        w_.U2(name);
        return classes_[internalName] = index;
    }
    std::uint16_t Methodref(const std::string &owner, const std::string &name, const std::string &desc) {
        const std::string key = owner + "." + name + desc;
        if (auto it = methods_.find(key); it != methods_.end()) return it->second;
        const std::uint16_t cls = Class(owner);
        const std::uint16_t n = Utf8(name), d = Utf8(desc);
        const std::uint16_t nat = Take(2), index = static_cast<std::uint16_t>(nat + 1);
        w_.U1(kNameAndType);
        w_.U2(n);
        w_.U2(d);
        w_.U1(kMethodref);
        w_.U2(cls);
        w_.U2(nat);
        return methods_[key] = index;
    }
    std::uint16_t Integer(std::int32_t v) {
        if (auto it = ints_.find(v); it != ints_.end()) return it->second;
        const std::uint16_t index = Take(1);
        w_.U1(kInteger);
        w_.U4(static_cast<std::uint32_t>(v));
        return ints_[v] = index;
    }
    std::uint16_t count() const { return static_cast<std::uint16_t>(next_); }
    const std::vector<std::uint8_t> &bytes() const { return w_.out; }
    bool full() const { return next_ > 0xfff0; }

private:
    std::uint16_t Take(unsigned slots) {
        if (next_ + slots > 0xffff) throw SkipMethod("the constant pool is full");
        const auto index = static_cast<std::uint16_t>(next_);
        next_ += slots;
        return index;
    }
    const ConstantPool &cp_;
    unsigned next_;
    Writer w_;
    std::map<std::string, std::uint16_t> utf8_, classes_, methods_;
    std::map<std::int32_t, std::uint16_t> ints_;
};

// ---- Class structure --------------------------------------------------------------

struct Attribute {
    std::uint16_t nameIndex;
    std::string name;
    std::size_t start;  // offset of the attribute (name index) in the class
    std::size_t body;   // offset of its body
    std::uint32_t length;
};

std::vector<Attribute> ReadAttributes(Reader &r, const ConstantPool &cp) {
    std::vector<Attribute> attrs(r.U2());
    for (auto &a : attrs) {
        a.start = r.pos();
        a.nameIndex = r.U2();
        a.name = cp.Utf8(a.nameIndex);
        a.length = r.U4();
        a.body = r.pos();
        r.Skip(a.length);
    }
    return attrs;
}

struct Method {
    std::size_t start = 0, end = 0;  // the method_info in the class
    std::uint16_t access = 0, nameIndex = 0, descIndex = 0;
    std::vector<Attribute> attrs;
    int code = -1;  // index of the Code attribute in attrs
};

struct ParsedClass {
    std::span<const std::uint8_t> data;
    std::uint16_t major = 0;
    ConstantPool cp;
    std::size_t methodsCountAt = 0;  // offset of methods_count
    std::vector<Method> methods;
    ClassDecl decl;
};

struct ExceptionEntry {
    std::uint16_t start, end, handler, catchType;
};

struct Code {
    std::uint16_t maxStack = 0, maxLocals = 0;
    std::span<const std::uint8_t> bytes;
    std::vector<ExceptionEntry> exceptions;
    std::vector<Attribute> attrs;
};

Code ReadCode(const ParsedClass &pc, const Attribute &a) {
    Reader r(pc.data.subspan(0, a.body + a.length), a.body);
    Code c;
    c.maxStack = r.U2();
    c.maxLocals = r.U2();
    const std::uint32_t len = r.U4();
    if (len == 0 || len > 65535) throw FormatError("code length " + std::to_string(len) + " out of range");
    c.bytes = r.Bytes(len);
    c.exceptions.resize(r.U2());
    for (auto &e : c.exceptions) {
        e = {r.U2(), r.U2(), r.U2(), r.U2()};
        if (e.start >= e.end || e.end > len || e.handler >= len) throw FormatError("exception table entry out of range");
    }
    c.attrs = ReadAttributes(r, pc.cp);
    if (r.pos() != a.body + a.length) throw FormatError("Code attribute length mismatch");
    // The rewriter re-emits these tables entry by entry under their old length, so the
    // length must be exactly what the entry count says (the JVM requires it too).
    for (const auto &t : c.attrs) {
        const unsigned entry = t.name == "LineNumberTable" ? 4
                               : t.name == "LocalVariableTable" || t.name == "LocalVariableTypeTable" ? 10
                                                                                                        : 0;
        if (entry != 0 && (t.length < 2 || t.length != 2 + std::uint64_t{entry} * pc.cp.U2At(t.body))) {
            throw FormatError(t.name + " length does not match its entry count");
        }
    }
    return c;
}

std::vector<LineEntry> ReadLines(const ParsedClass &pc, const Code &code) {
    std::vector<LineEntry> lines;
    for (const auto &a : code.attrs) {
        if (a.name != "LineNumberTable") continue;
        Reader r(pc.data.subspan(0, a.body + a.length), a.body);
        const std::uint16_t n = r.U2();
        for (unsigned i = 0; i < n; ++i) {
            const std::uint16_t pc0 = r.U2(), line = r.U2();
            lines.push_back({pc0, line});
        }
    }
    std::sort(lines.begin(), lines.end(), [](const LineEntry &a, const LineEntry &b) { return a.offset < b.offset; });
    return lines;
}

ParsedClass Parse(std::span<const std::uint8_t> data) {
    ParsedClass pc;
    pc.data = data;
    Reader r(data);
    if (r.U4() != 0xCAFEBABE) throw FormatError("not a class file (bad magic number)");
    r.U2();  // minor
    pc.major = r.U2();
    if (pc.major < 45) throw FormatError("class file version " + std::to_string(pc.major) + " is not a valid version");
    pc.cp = ReadConstantPool(r, data);
    pc.decl.majorVersion = pc.major;
    pc.decl.accessFlags = r.U2();
    pc.decl.internalName = pc.cp.ClassName(r.U2());
    if (const std::uint16_t super = r.U2(); super != 0) pc.decl.superName = pc.cp.ClassName(super);
    r.Skip(2 * std::size_t{r.U2()});  // interfaces
    const std::uint16_t fields = r.U2();
    for (unsigned i = 0; i < fields; ++i) {
        r.Skip(6);
        ReadAttributes(r, pc.cp);
    }
    pc.methodsCountAt = r.pos();
    pc.methods.resize(r.U2());
    for (auto &m : pc.methods) {
        m.start = r.pos();
        m.access = r.U2();
        m.nameIndex = r.U2();
        m.descIndex = r.U2();
        m.attrs = ReadAttributes(r, pc.cp);
        m.end = r.pos();
        MethodDecl d;
        d.name = pc.cp.Utf8(m.nameIndex);
        d.descriptor = pc.cp.Utf8(m.descIndex);
        d.accessFlags = m.access;
        for (std::size_t i = 0; i < m.attrs.size(); ++i) {
            if (m.attrs[i].name != "Code") continue;
            if (m.code >= 0) throw FormatError("method " + d.name + " has two Code attributes");
            m.code = static_cast<int>(i);
        }
        if (m.code >= 0) {
            d.hasCode = true;
            d.lines = ReadLines(pc, ReadCode(pc, m.attrs[static_cast<std::size_t>(m.code)]));
        }
        pc.decl.methods.push_back(std::move(d));
    }
    for (const auto &a : ReadAttributes(r, pc.cp)) {
        if (a.name == "SourceFile" && a.length == 2) pc.decl.sourceFile = pc.cp.Utf8(pc.cp.U2At(a.body));
    }
    if (r.pos() != data.size()) throw FormatError("extra bytes after the class");
    return pc;
}

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

// ---- Instructions -------------------------------------------------------------------

enum Op : std::uint8_t {
    kAload0 = 0x2a, kAload = 0x19, kIfeq = 0x99, kGoto = 0xa7, kJsr = 0xa8, kTableswitch = 0xaa,
    kLookupswitch = 0xab, kIreturn = 0xac, kReturn = 0xb1, kInvokespecial = 0xb7, kInvokestatic = 0xb8,
    kAthrow = 0xbf, kWide = 0xc4, kIfnull = 0xc6, kIfnonnull = 0xc7, kGotoW = 0xc8, kJsrW = 0xc9,
    kSipush = 0x11, kLdcW = 0x13,
};

struct Insn {
    std::uint32_t off = 0, len = 0;
    std::uint8_t op = 0;
    std::vector<std::int64_t> targets;  // absolute old targets (switch: default first)
    bool branch16 = false;              // a 2-byte branch offset
    bool widen = false;                 // rewrite goto/jsr as goto_w/jsr_w
    std::int32_t low = 0;               // tableswitch
    std::vector<std::int32_t> keys;     // lookupswitch
    // layout
    std::uint32_t newOff = 0, newLen = 0, probeBefore = 0;
};

bool IsReturn(std::uint8_t op) { return op >= kIreturn && op <= kReturn; }

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

// ---- StackMapTable -----------------------------------------------------------------

struct VType {
    std::uint8_t tag;      // 0 Top .. 8 Uninitialized
    std::uint16_t value;   // Object: cpool index; Uninitialized: offset of `new`
};

struct Frame {
    std::uint8_t kind;             // the frame_type byte as read (re-encoded by family)
    std::uint32_t offset;          // absolute, old
    std::vector<VType> locals;     // append: the appended ones; full: all
    std::vector<VType> stack;      // same_locals_1: one; full: all
    std::uint8_t chop = 0;
};

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

// ---- Rewriting one method -----------------------------------------------------------

struct ProbeRefs {
    std::uint16_t enter = 0, leave = 0, leaveExceptional = 0, throwable = 0;
};

constexpr std::uint32_t kProbeSize = 6;    // push id (3) + invokestatic (3)
constexpr std::uint32_t kHandlerSize = 7;  // probe + athrow

void EmitProbe(Writer &w, std::int32_t id, std::uint16_t method, PoolAppender &pool) {
    if (id <= 32767) {
        w.U1(kSipush);
        w.U2(static_cast<unsigned>(id));
    } else {
        w.U1(kLdcW);
        w.U2(pool.Integer(id));
    }
    w.U1(kInvokestatic);
    w.U2(method);
}

struct Handler {
    std::uint32_t oldStart, oldEnd;  // covered original code, [start, end)
    bool thisUninitialized;          // constructor code before super()/this()
    std::uint32_t newPc = 0;
};

std::vector<std::uint8_t> RewriteCode(const ParsedClass &pc, const Method &m, const MethodDecl &d, std::int32_t id,
                                      PoolAppender &pool, const ProbeRefs &refs) {
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
    if (d.name == "<init>") {
        const std::optional<std::uint32_t> init = FindThisInitialized(pc, code.bytes, insns, frames);
        const std::uint32_t split = init.value_or(len);
        // Class files before version 50 are verified by type inference, which does not
        // allow a handler over code where `this` is uninitialized: cover the rest only.
        if (needFrames) handlers.push_back({0, split, true});
        if (init) handlers.push_back({split + 3, len, false});
    } else {
        handlers.push_back({0, len, false});
    }

    // Layout: probes go before every return; branches to a return go to its probe.
    auto targetNew = [&](std::int64_t off) -> std::uint32_t {
        const Insn &in = insnAt(off, "target");
        return in.newOff - in.probeBefore;
    };
    auto rangeEnd = [&](std::uint32_t off, std::uint32_t codeEnd) { return off == len ? codeEnd : targetNew(off); };
    std::uint32_t codeEnd = 0;
    for (bool again = true; again;) {
        again = false;
        std::uint32_t pos = kProbeSize;
        for (Insn &in : insns) {
            in.probeBefore = IsReturn(in.op) ? kProbeSize : 0;
            pos += in.probeBefore;
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
    // The counts and max_stack below are u2s; one more would wrap around.
    if (code.maxStack == 0xffff) throw SkipMethod("max_stack is 65535; the probes need one more word");
    if (code.exceptions.size() + handlers.size() > 0xffff) throw SkipMethod("the exception table would exceed 65535 entries");
    if (code.attrs.size() + 1 > 0xffff && needFrames && stackMap == nullptr) {
        throw SkipMethod("a StackMapTable would make more than 65535 Code attributes");
    }

    // Code.
    Writer c;
    EmitProbe(c, id, refs.enter, pool);
    for (const Insn &in : insns) {
        if (in.probeBefore != 0) EmitProbe(c, id, refs.leave, pool);
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
    w.U2(std::max<unsigned>(code.maxStack + 1u, 2u));  // probe pushes one word; a handler two
    w.U2(code.maxLocals);
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
        w.U2(targetNew(h.oldStart));  // old 0 maps after the enter probe
        w.U2(rangeEnd(h.oldEnd, codeEnd));
        w.U2(h.newPc);
        w.U2(0);  // any Throwable
    }

    const bool addStackMap = needFrames && stackMap == nullptr;
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
    return w.out;
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
        std::vector<std::vector<std::uint8_t>> newCode(pc.methods.size());
        for (std::size_t i = 0; i < pc.methods.size(); ++i) {
            const MethodDecl &d = pc.decl.methods[i];
            if (!d.hasCode) continue;
            const std::int64_t id = select(pc.decl, d);
            if (id == kNoProbe) continue;
            if (id < 0 || id > std::numeric_limits<std::int32_t>::max()) {
                result.skipped.push_back(d.name + d.descriptor + ": probe id out of range");
                continue;
            }
            try {
                if (!refs) {
                    ProbeRefs r;
                    r.enter = pool.Methodref(probes.owner, probes.enter, "(I)V");
                    r.leave = pool.Methodref(probes.owner, probes.leave, "(I)V");
                    r.leaveExceptional = pool.Methodref(probes.owner, probes.leaveExceptional, "(I)V");
                    r.throwable = pool.Class("java/lang/Throwable");
                    refs = r;
                }
                newCode[i] = RewriteCode(pc, pc.methods[i], d, static_cast<std::int32_t>(id), pool, *refs);
                ++result.instrumented;
            } catch (const SkipMethod &e) {
                result.skipped.push_back(d.name + d.descriptor + ": " + e.what());
            }
        }
        if (result.instrumented == 0) return result;

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
        result.bytes.clear();
        result.error = e.what();
    }
    return result;
}

}  // namespace martini::jvm
