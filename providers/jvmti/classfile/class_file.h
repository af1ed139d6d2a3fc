// Internal to the class-file rewriter: bounds-checked byte reading and writing, the
// constant pool (read, and appended to), and the class structure down to Code
// attributes. Every read is bounds-checked: malformed input throws FormatError.
#pragma once

#include "instrumenter.h"

#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace martini::jvm::detail {
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

ConstantPool ReadConstantPool(Reader &r, std::span<const std::uint8_t> data);

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
        return MemberRef(kMethodref, owner, name, desc);
    }
    std::uint16_t Fieldref(const std::string &owner, const std::string &name, const std::string &desc) {
        return MemberRef(kFieldref, owner, name, desc);
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
    std::uint16_t MemberRef(CpTag tag, const std::string &owner, const std::string &name, const std::string &desc) {
        std::string key(1, static_cast<char>(tag));
        key.append(owner).append(".").append(name).append(desc);
        if (auto it = members_.find(key); it != members_.end()) return it->second;
        const std::uint16_t cls = Class(owner);
        const std::uint16_t n = Utf8(name), d = Utf8(desc);
        const std::uint16_t nat = Take(2), index = static_cast<std::uint16_t>(nat + 1);
        w_.U1(kNameAndType);
        w_.U2(n);
        w_.U2(d);
        w_.U1(tag);
        w_.U2(cls);
        w_.U2(nat);
        return members_[key] = index;
    }
    std::uint16_t Take(unsigned slots) {
        if (next_ + slots > 0xffff) throw SkipMethod("the constant pool is full");
        const auto index = static_cast<std::uint16_t>(next_);
        next_ += slots;
        return index;
    }
    const ConstantPool &cp_;
    unsigned next_;
    Writer w_;
    std::map<std::string, std::uint16_t> utf8_, classes_, members_;
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

std::vector<Attribute> ReadAttributes(Reader &r, const ConstantPool &cp);

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
    std::uint16_t thisClass = 0;     // this_class: the class's own Class constant
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

Code ReadCode(const ParsedClass &pc, const Attribute &a);

std::vector<LineEntry> ReadLines(const ParsedClass &pc, const Code &code);

ParsedClass Parse(std::span<const std::uint8_t> data);

}  // namespace martini::jvm::detail
