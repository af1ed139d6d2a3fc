#include "class_file.h"

#include <algorithm>

namespace martini::jvm::detail {

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
    pc.thisClass = r.U2();
    pc.decl.internalName = pc.cp.ClassName(pc.thisClass);
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

}  // namespace martini::jvm::detail
