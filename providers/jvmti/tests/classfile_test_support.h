// What the class-file tests share (classfile_test.cpp, classfile_probe_test.cpp): the
// test classes javac compiled, an independent class reader for checking rewritten
// code, a builder for crafted classes, and the probe checks.
#pragma once

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


namespace classfile_test {

namespace fs = std::filesystem;
using namespace martini::jvm;

using Bytes = std::vector<std::uint8_t>;

inline const fs::path kClasses = MARTINI_TEST_CLASSES;     // "" when javac was not found
inline const fs::path kSampleJava = MARTINI_SAMPLE_JAVA;

#define REQUIRE_CLASSES()                                                   \
    do {                                                                    \
        if (kClasses.empty()) GTEST_SKIP() << "javac not found at build time"; \
    } while (0)

inline Bytes ReadFile(const fs::path &p) {
    std::ifstream is(p, std::ios::binary);
    EXPECT_TRUE(is) << "cannot read " << p;
    return Bytes((std::istreambuf_iterator<char>(is)), {});
}

inline Bytes LoadClass(const std::string &internalName) { return ReadFile(kClasses / (internalName + ".class")); }

// Every class javac wrote for Sample.java, sorted by file name.
inline std::vector<fs::path> SampleClassFiles() {
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

inline std::int64_t SelectNone(const ClassDecl &, const MethodDecl &) { return kNoProbe; }

// Allocation probes for every class asked about, ids 1000, 1001, ...
struct AllocAll {
    std::int64_t next = 1000;
    std::int64_t operator()(const ClassDecl &) { return next++; }
};

inline const MethodDecl *FindMethod(const ClassDecl &c, const std::string &name, const std::string &desc) {
    for (const auto &m : c.methods) {
        if (m.name == name && m.descriptor == desc) return &m;
    }
    return nullptr;
}

inline std::vector<std::string> Signatures(const ClassDecl &c) {
    std::vector<std::string> s;
    for (const auto &m : c.methods) s.push_back(m.name + m.descriptor);
    return s;
}

// The 1-based line of Sample.java whose text contains `needle`.
inline std::uint32_t SourceLine(const std::string &needle) {
    std::ifstream is(kSampleJava);
    std::string line;
    for (std::uint32_t n = 1; std::getline(is, line); ++n) {
        if (line.find(needle) != std::string::npos) return n;
    }
    ADD_FAILURE() << "no line of " << kSampleJava << " contains " << needle;
    return 0;
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
inline std::string CheckInstrumentResult(const InstrumentResult &r) {
    if (!r.parsed) {
        if (r.error.empty()) return "rejected without a reason";
        if (r.changed || !r.bytes.empty()) return "rejected but returned bytes";
        return "";
    }
    if (!r.changed) return r.bytes.empty() ? "" : "unchanged but returned bytes";
    if (r.bytes.empty()) return "changed but no bytes";
    if (r.instrumented == 0 && r.allocProbed == 0 && r.sitesProbed == 0 && r.arraysProbed == 0 &&
        r.coverage.empty()) {
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
    // "owner.name descriptor" of a Methodref or Fieldref.
    std::string Member(unsigned i) const {
        if (tags.at(i) != 10 && tags.at(i) != 9) return "?";
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

inline TestClass ReadTestClass(const Bytes &b) {
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

// The code array of method `name` (the first with code), found with the reader above,
// which is independent of the one under test.
inline std::optional<Bytes> MethodCode(const Bytes &b, const std::string &name) {
    for (const TestMethod &m : ReadTestClass(b).methods) {
        if (m.name == name && !m.code.empty()) return m.code;
    }
    return std::nullopt;
}

inline std::size_t MethodIndex(const ClassDecl &d, const std::string &name, const std::string &desc) {
    for (std::size_t i = 0; i < d.methods.size(); ++i) {
        if (d.methods[i].name == name && d.methods[i].descriptor == desc) return i;
    }
    ADD_FAILURE() << "no method " << name << desc;
    return 0;
}

// Offset of the first invokespecial (javac's super()/this() call in these constructors).
inline std::size_t FirstInvokespecial(const Bytes &code) {
    for (std::size_t i = 0; i < code.size(); ++i) {
        if (code[i] == 0xb7) return i;
    }
    ADD_FAILURE() << "no invokespecial";
    return 0;
}

inline unsigned U2At(const Bytes &b, std::size_t at) { return b.at(at) << 8 | b.at(at + 1); }

constexpr const char *kAllocProbe = "martini/runtime/Probes.alloc(Ljava/lang/Object;Ljava/lang/Class;I)V";
constexpr const char *kAllocByClassIdProbe = "martini/runtime/Probes.allocByClassId(Ljava/lang/Object;I)V";

// Checks the 10-byte allocation probe at `at`: aload_0; ldc_w <this class>; sipush id;
// invokestatic Probes.alloc.
inline void ExpectAllocProbe(const TestClass &c, const Bytes &code, std::size_t at, unsigned id) {
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
inline Bytes CraftedConstructorClass(std::uint16_t major, Bytes code) {
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

}  // namespace classfile_test
