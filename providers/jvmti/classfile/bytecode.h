// Internal to the class-file rewriter: method descriptors, instruction decoding,
// StackMapTable frames, and where a constructor's super()/this() call is.
#pragma once

#include "class_file.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace martini::jvm::detail {

// ---- Descriptors ------------------------------------------------------------------

// Stack words of one field type at `i`, advancing `i`; 0 for V.
unsigned TypeWords(const std::string &d, std::size_t &i);

// {words of the arguments, words of the result} of a method descriptor.
std::pair<unsigned, unsigned> MethodWords(const std::string &d);

// ---- Instructions -------------------------------------------------------------------

enum Op : std::uint8_t {
    kAload0 = 0x2a, kAload = 0x19, kIfeq = 0x99, kGoto = 0xa7, kJsr = 0xa8, kTableswitch = 0xaa,
    kLookupswitch = 0xab, kIreturn = 0xac, kReturn = 0xb1, kInvokespecial = 0xb7, kInvokestatic = 0xb8,
    kAthrow = 0xbf, kWide = 0xc4, kIfnull = 0xc6, kIfnonnull = 0xc7, kGotoW = 0xc8, kJsrW = 0xc9,
    kSipush = 0x11, kLdcW = 0x13, kIinc = 0x84, kInvokevirtual = 0xb6, kDup = 0x59,
    kNewarray = 0xbc, kAnewarray = 0xbd, kMultianewarray = 0xc5, kGetstatic = 0xb2, kPutstatic = 0xb3,
    kIconst1 = 0x04, kIadd = 0x60, kIconst0 = 0x03, kBipush = 0x10, kDup2 = 0x5c, kLaload = 0x2f,
    kLconst1 = 0x0a, kLadd = 0x61, kLastore = 0x50, kAstore = 0x3a, kAstore0 = 0x4b,
};

struct Insn {
    std::uint32_t off = 0, len = 0;
    std::uint8_t op = 0;
    std::vector<std::int64_t> targets;  // absolute old targets (switch: default first)
    bool branch16 = false;              // a 2-byte branch offset
    std::int32_t low = 0;               // tableswitch
    std::vector<std::int32_t> keys;     // lookupswitch
};

inline bool IsReturn(std::uint8_t op) { return op >= kIreturn && op <= kReturn; }

std::uint32_t FixedLength(std::uint8_t op);

std::vector<Insn> Decode(std::span<const std::uint8_t> code);

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

VType ReadVType(Reader &r);

std::vector<Frame> ReadFrames(const ParsedClass &pc, const Attribute &a);

void WriteVType(Writer &w, VType v, const std::function<std::uint32_t(std::uint32_t)> &newInsnOffset);

// Stack words of a field reference's type.
unsigned TypeWordsOf(const ParsedClass &pc, std::uint16_t fieldref);

// {words popped, words pushed} of the instructions FindThisInitialized does not
// handle itself (JVMS chapter 6; long and double take two words).
std::pair<unsigned, unsigned> SimpleEffect(std::uint8_t op, std::span<const std::uint8_t> code, std::uint32_t off);

// ---- Constructors: where does super()/this() initialize `this`? ------------------------

// Simulates the operand stack (one flag per word: "is uninitializedThis") from the
// method start, resynchronizing at every stack map frame, until the invokespecial
// <init> whose receiver is uninitializedThis. Returns that instruction's old offset.
std::optional<std::uint32_t> FindThisInitialized(const ParsedClass &pc, std::span<const std::uint8_t> code,
                                                 const std::vector<Insn> &insns, const std::vector<Frame> &frames);

// The class named by the invokespecial (or other member reference instruction) at `off`.
std::string InvokeOwner(const ParsedClass &pc, std::span<const std::uint8_t> code, std::uint32_t off);

// Whether any instruction writes local variable 0 (a store, or iinc, to slot 0).
bool WritesLocal0(std::span<const std::uint8_t> code, const std::vector<Insn> &insns);

}  // namespace martini::jvm::detail
