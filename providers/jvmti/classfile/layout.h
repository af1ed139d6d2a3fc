// Internal to the class-file rewriter: code inserted into one method. The planners
// (planners.h) say what goes where as a list of insertions; one layout pass places
// them and writes the new Code attribute, moving every offset that points into the
// code: branches (widening goto/jsr to goto_w/jsr_w where a jump no longer fits, and
// re-padding switches), the exception table, StackMapTable (Uninitialized(offset)
// too), LineNumberTable, LocalVariableTable and LocalVariableTypeTable.
#pragma once

#include "bytecode.h"
#include "class_file.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace martini::jvm::detail {

// Classes from version 50 are verified with their StackMapTable (JVMS 4.10.1); older
// ones by type inference, which ignores it.
inline constexpr std::uint16_t kFramesVersion = 50;

// One method's Code, decoded and checked: every branch target, exception range and
// stack map frame is on an instruction.
struct MethodCode {
    const ParsedClass *pc = nullptr;
    const Attribute *attr = nullptr;  // the Code attribute
    Code code;
    std::vector<Insn> insns;
    std::vector<std::int32_t> index;  // old offset -> index in insns; -1 inside an instruction
    std::vector<Frame> frames;        // StackMapTable's, old offsets

    const Attribute *StackMap() const;

    std::uint32_t size() const { return static_cast<std::uint32_t>(code.bytes.size()); }
    // The index of the instruction at `off`; FormatError "<what> <off> is not an instruction".
    std::size_t IndexAt(std::int64_t off, const char *what) const;
    const Insn &At(std::int64_t off, const char *what) const { return insns[IndexAt(off, what)]; }
};

// Throws SkipMethod for a Code attribute whose offsets the rewriter does not know.
MethodCode ReadMethodCode(const ParsedClass &pc, const Method &m);

enum class Placement : std::uint8_t {
    kMethodStart,  // before the first instruction; a range or line starting at old 0 stays after it
    kAfter,        // right after the instruction at `at`, run only by falling through from it
    kBefore,       // right before the instruction at `at`: a branch to that instruction lands on it
    kHandler,      // after the code, reached only through the exception table
};

struct Insertion {
    Placement place = Placement::kBefore;
    std::uint32_t at = 0;     // old offset of the instruction (kAfter, kBefore)
    std::uint32_t size = 0;   // bytes `emit` writes
    unsigned stack = 0;       // words pushed on what the code holds there (a handler: see minStack)
    unsigned locals = 0;      // locals used past max_locals
    std::function<void(Writer &, PoolAppender &)> emit;
};

// An exception-table entry catching anything in old code [oldStart, oldEnd) at the
// kHandler insertion `handler`, and its stack map frame (the stack: the Throwable).
// With `prologue`, the range is the method-start insertions instead (old code is not
// covered), and `catchType` (a Class constant; 0: any) says what it catches.
struct CatchAll {
    std::uint32_t oldStart = 0, oldEnd = 0;
    std::size_t handler = 0;    // index in MethodEdit::insertions
    std::vector<VType> locals;  // the frame's locals
    bool prologue = false;
    std::uint16_t catchType = 0;
};

// A local set by the method-start insertions and live in all the code after them: every
// stack map frame is written in full, with it at `slot` (Top over the slots between).
struct LiveLocal {
    unsigned slot = 0;
    VType type{};
    std::vector<VType> initial;  // the frame locals the method starts with (JVMS 4.10.1.6)
};

struct MethodEdit {
    std::vector<Insertion> insertions;  // code order within a place; planners add in probe-kind order
    std::vector<CatchAll> catchAlls;    // after the program's own handlers, which keep priority
    std::uint16_t throwable = 0;        // Class constant of java/lang/Throwable, for the frames
    unsigned minStack = 0;              // max_stack at least this (a handler's whole stack)
    unsigned reservedLocals = 0;        // locals past max_locals that later planners leave alone
    std::optional<LiveLocal> liveLocal;
};

// Where each instruction lands, and the new Code attribute.
class Layout {
public:
    // Places the insertions; throws SkipMethod when the result breaks a class-file limit.
    Layout(const MethodCode &mc, const MethodEdit &edit);

    // The Code attribute; emits the insertions (constants go to `pool`, in code order).
    std::vector<std::uint8_t> Write(PoolAppender &pool) const;

    // The new offset of the instruction at old `off` itself.
    std::uint32_t InstructionAt(std::int64_t off, const char *what) const;

private:
    struct Slot {
        std::uint32_t start = 0;   // the insertions in front of the instruction
        std::uint32_t entry = 0;   // where branches to it land
        std::uint32_t newOff = 0, newLen = 0;
        bool widen = false;        // goto/jsr as goto_w/jsr_w
    };
    void Place();
    void CheckLimits() const;
    std::uint32_t Entry(std::int64_t off) const;
    std::uint32_t RangeStart(std::uint16_t off) const;
    std::uint32_t RangeEnd(std::uint32_t off) const;
    void WriteInstruction(Writer &c, std::size_t i) const;
    void WriteCode(Writer &c, PoolAppender &pool) const;
    void WriteExceptionTable(Writer &w) const;
    void WriteAttributes(Writer &w, PoolAppender &pool) const;
    void WriteFrames(Writer &w, std::uint16_t nameIndex) const;
    void WriteLineNumbers(Writer &w, const Attribute &a) const;
    void WriteLocalVariables(Writer &w, const Attribute &a) const;
    bool AddsStackMap() const;

    const MethodCode &mc_;
    const MethodEdit &edit_;
    std::vector<std::size_t> prologue_, handlers_;    // insertion indexes
    std::vector<std::vector<std::size_t>> gaps_;      // per instruction: the insertions in front
    std::vector<std::uint32_t> fallThrough_, landing_;  // per instruction: bytes of kAfter / kBefore ones
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> handlerAt_;            // per insertion: new offset of a kHandler one
    std::uint32_t codeEnd_ = 0, total_ = 0;
    unsigned extraStack_ = 0, extraLocals_ = 0;
};

}  // namespace martini::jvm::detail
