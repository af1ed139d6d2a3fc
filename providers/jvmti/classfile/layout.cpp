#include "layout.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace martini::jvm::detail {

// ---- The method's code ----------------------------------------------------------------

const Attribute *MethodCode::StackMap() const {
    for (const auto &a : code.attrs) {
        if (a.name == "StackMapTable") return &a;
    }
    return nullptr;
}

std::size_t MethodCode::IndexAt(std::int64_t off, const char *what) const {
    if (off < 0 || off >= size() || index[static_cast<std::size_t>(off)] < 0) {
        throw FormatError(std::string(what) + " " + std::to_string(off) + " is not an instruction");
    }
    return static_cast<std::size_t>(index[static_cast<std::size_t>(off)]);
}

MethodCode ReadMethodCode(const ParsedClass &pc, const Method &m) {
    MethodCode mc;
    mc.pc = &pc;
    mc.attr = &m.attrs[static_cast<std::size_t>(m.code)];
    mc.code = ReadCode(pc, *mc.attr);
    for (const auto &a : mc.code.attrs) {
        if (a.name != "StackMapTable" && a.name != "LineNumberTable" && a.name != "LocalVariableTable" &&
            a.name != "LocalVariableTypeTable") {
            throw SkipMethod("its Code has a " + a.name + " attribute, whose offsets Martini does not rewrite");
        }
    }
    mc.insns = Decode(mc.code.bytes);
    mc.index.assign(mc.size() + 1, -1);
    for (std::size_t i = 0; i < mc.insns.size(); ++i) mc.index[mc.insns[i].off] = static_cast<std::int32_t>(i);
    for (const Insn &in : mc.insns) {
        for (std::int64_t t : in.targets) mc.IndexAt(t, "branch target");
    }
    for (const auto &e : mc.code.exceptions) {
        mc.IndexAt(e.start, "exception range start");
        mc.IndexAt(e.handler, "exception handler");
        if (e.end != mc.size()) mc.IndexAt(e.end, "exception range end");
    }
    if (const Attribute *stackMap = mc.StackMap()) mc.frames = ReadFrames(pc, *stackMap);
    for (const Frame &f : mc.frames) mc.IndexAt(f.offset, "stack map frame offset");
    return mc;
}

// ---- Layout -----------------------------------------------------------------------------

namespace {

// Re-encodes a frame in the family it was read in; the offset delta may now need the
// extended form.
void EncodeFrame(Writer &f, const Frame &fr, std::uint32_t delta,
                 const std::function<std::uint32_t(std::uint32_t)> &newInsnOffset) {
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

bool IsSwitch(std::uint8_t op) { return op == kTableswitch || op == kLookupswitch; }

// Every frame as a full frame whose locals hold the live local at its slot: a same,
// chop or append frame is read against the locals before it, from the method's initial
// ones on.
std::vector<Frame> WithLiveLocal(const std::vector<Frame> &frames, const LiveLocal &live) {
    std::vector<VType> locals = live.initial;
    std::vector<Frame> out;
    out.reserve(frames.size());
    for (const Frame &fr : frames) {
        Frame full{255, fr.offset, {}, {}, 0};
        if (fr.kind <= 63 || fr.kind == 251) {
            // same: the locals before, no stack
        } else if (fr.kind <= 127 || fr.kind == 247) {
            full.stack = fr.stack;
        } else if (fr.kind <= 250) {
            if (fr.chop > locals.size()) throw FormatError("a chop frame removes more locals than there are");
            locals.resize(locals.size() - fr.chop);
        } else if (fr.kind <= 254) {
            locals.insert(locals.end(), fr.locals.begin(), fr.locals.end());
        } else {
            locals = fr.locals;
            full.stack = fr.stack;
        }
        unsigned slots = 0;
        for (const VType &v : locals) slots += v.tag == 3 || v.tag == 4 ? 2 : 1;  // Double, Long
        if (slots > live.slot) throw FormatError("a stack map frame has more locals than max_locals");
        full.locals = locals;
        full.locals.resize(locals.size() + (live.slot - slots), VType{0, 0});  // Top
        full.locals.push_back(live.type);
        out.push_back(std::move(full));
    }
    return out;
}

}  // namespace

Layout::Layout(const MethodCode &mc, const MethodEdit &edit)
    : mc_(mc), edit_(edit), gaps_(mc.insns.size()), fallThrough_(mc.insns.size()), landing_(mc.insns.size()),
      slots_(mc.insns.size()), handlerAt_(edit.insertions.size()) {
    // In front of an instruction: first what runs only after the one before it, then
    // what a branch to the instruction runs too.
    for (const Placement place : {Placement::kAfter, Placement::kBefore}) {
        for (std::size_t k = 0; k < edit.insertions.size(); ++k) {
            const Insertion &ins = edit.insertions[k];
            if (ins.place != place) continue;
            const std::size_t i = mc.IndexAt(ins.at, "insertion point") + (place == Placement::kAfter ? 1 : 0);
            if (i >= gaps_.size()) throw FormatError("an insertion after the last instruction");
            gaps_[i].push_back(k);
            (place == Placement::kAfter ? fallThrough_ : landing_)[i] += ins.size;
        }
    }
    for (std::size_t k = 0; k < edit.insertions.size(); ++k) {
        const Insertion &ins = edit.insertions[k];
        if (ins.place == Placement::kMethodStart) prologue_.push_back(k);
        if (ins.place == Placement::kHandler) handlers_.push_back(k);
        if (ins.place != Placement::kHandler) extraStack_ = std::max(extraStack_, ins.stack);
        extraLocals_ = std::max(extraLocals_, ins.locals);
    }
    Place();
    CheckLimits();
}

// Assigns new offsets until no 16-bit jump overflows; each round can only widen a
// goto/jsr, so it ends.
void Layout::Place() {
    std::uint32_t prologue = 0;
    for (std::size_t k : prologue_) prologue += edit_.insertions[k].size;
    for (bool again = true; again;) {
        again = false;
        std::uint32_t pos = prologue;
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            const Insn &in = mc_.insns[i];
            Slot &s = slots_[i];
            s.start = pos;
            s.entry = pos += fallThrough_[i];
            s.newOff = pos += landing_[i];
            if (IsSwitch(in.op)) {
                const std::uint32_t oldPad = (4 - (in.off + 1) % 4) % 4, newPad = (4 - (pos + 1) % 4) % 4;
                s.newLen = in.len - oldPad + newPad;
            } else {
                s.newLen = s.widen ? 5 : in.len;
            }
            pos += s.newLen;
        }
        codeEnd_ = pos;
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            const Insn &in = mc_.insns[i];
            if (!in.branch16 || slots_[i].widen) continue;
            const std::int64_t delta = std::int64_t{Entry(in.targets[0])} - slots_[i].newOff;
            if (delta >= -32768 && delta <= 32767) continue;
            if (in.op != kGoto && in.op != kJsr) {
                throw SkipMethod("a conditional branch would no longer reach its target (method too large)");
            }
            slots_[i].widen = true;  // goto -> goto_w, jsr -> jsr_w: no new stack map frame needed
            again = true;
        }
    }
    total_ = codeEnd_;
    for (std::size_t k : handlers_) {
        handlerAt_[k] = total_;
        total_ += edit_.insertions[k].size;
    }
}

// The counts and max_stack/max_locals are u2s; one more would wrap around.
void Layout::CheckLimits() const {
    const Code &code = mc_.code;
    if (total_ > 65535) throw SkipMethod("the instrumented code would exceed the 64 KiB code limit");
    if (code.maxStack + extraStack_ > 0xffff) {
        throw SkipMethod("max_stack is " + std::to_string(code.maxStack) + "; the probes need " +
                         std::to_string(extraStack_) + " more words");
    }
    if (code.exceptions.size() + edit_.catchAlls.size() > 0xffff) {
        throw SkipMethod("the exception table would exceed 65535 entries");
    }
    if (code.attrs.size() + 1 > 0xffff && AddsStackMap()) {
        throw SkipMethod("a StackMapTable would make more than 65535 Code attributes");
    }
}

// A method without a StackMapTable needs one only for the catch-all handlers' frames.
bool Layout::AddsStackMap() const {
    return mc_.pc->major >= kFramesVersion && mc_.StackMap() == nullptr && !edit_.catchAlls.empty();
}

std::uint32_t Layout::Entry(std::int64_t off) const { return slots_[mc_.IndexAt(off, "target")].entry; }

std::uint32_t Layout::RangeEnd(std::uint32_t off) const { return off == mc_.size() ? codeEnd_ : Entry(off); }

std::uint32_t Layout::InstructionAt(std::int64_t off, const char *what) const {
    return slots_[mc_.IndexAt(off, what)].newOff;
}

// ---- Writing ----------------------------------------------------------------------------

std::vector<std::uint8_t> Layout::Write(PoolAppender &pool) const {
    Writer c;
    WriteCode(c, pool);
    Writer w;
    w.U2(mc_.attr->nameIndex);
    const std::size_t lengthAt = w.size();
    w.U4(0);
    w.U2(std::max<unsigned>(mc_.code.maxStack + extraStack_, edit_.minStack));
    w.U2(mc_.code.maxLocals + extraLocals_);
    w.U4(static_cast<std::uint32_t>(c.size()));
    w.Bytes(c.out);
    WriteExceptionTable(w);
    WriteAttributes(w, pool);
    w.PatchU4(lengthAt, static_cast<std::uint32_t>(w.size() - lengthAt - 4));
    return std::move(w.out);
}

void Layout::WriteCode(Writer &c, PoolAppender &pool) const {
    const auto emit = [&](std::size_t k) {
        const Insertion &ins = edit_.insertions[k];
        const std::size_t before = c.size();
        ins.emit(c, pool);
        if (c.size() - before != ins.size) throw std::logic_error("an insertion wrote other than its size");
    };
    for (std::size_t k : prologue_) emit(k);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        for (std::size_t k : gaps_[i]) emit(k);
        WriteInstruction(c, i);
    }
    for (std::size_t k : handlers_) emit(k);
}

void Layout::WriteInstruction(Writer &c, std::size_t i) const {
    const Insn &in = mc_.insns[i];
    const Slot &s = slots_[i];
    const auto rel = [&](std::int64_t target) {
        return static_cast<std::uint32_t>(static_cast<std::int32_t>(std::int64_t{Entry(target)} - s.newOff));
    };
    if (IsSwitch(in.op)) {
        c.U1(in.op);
        while (c.size() % 4 != 0) c.U1(0);
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
    } else if (in.branch16 && s.widen) {
        c.U1(in.op == kGoto ? kGotoW : kJsrW);
        c.U4(rel(in.targets[0]));
    } else if (in.branch16) {
        c.U1(in.op);
        c.U2(rel(in.targets[0]) & 0xffff);
    } else if (in.op == kGotoW || in.op == kJsrW) {
        c.U1(in.op);
        c.U4(rel(in.targets[0]));
    } else {
        c.Bytes(mc_.code.bytes.subspan(in.off, in.len));
    }
}

void Layout::WriteExceptionTable(Writer &w) const {
    const auto covers = [](const CatchAll &h) { return h.prologue || h.oldStart < h.oldEnd; };
    const auto added = std::count_if(edit_.catchAlls.begin(), edit_.catchAlls.end(), covers);
    w.U2(static_cast<unsigned>(mc_.code.exceptions.size() + static_cast<std::size_t>(added)));
    for (const auto &e : mc_.code.exceptions) {
        w.U2(Entry(e.start));
        w.U2(RangeEnd(e.end));
        w.U2(Entry(e.handler));
        w.U2(e.catchType);
    }
    for (const CatchAll &h : edit_.catchAlls) {
        if (!covers(h)) continue;
        if (h.prologue) {
            w.U2(0);
            w.U2(slots_[0].start);  // old 0 comes right after the method-start insertions
        } else {
            // From the start of what is inserted in front: an allocation probe is covered
            // too, and old 0 maps after the method-start insertions.
            w.U2(slots_[mc_.IndexAt(h.oldStart, "handler range start")].start);
            w.U2(RangeEnd(h.oldEnd));
        }
        w.U2(handlerAt_[h.handler]);
        w.U2(h.catchType);
    }
}

void Layout::WriteAttributes(Writer &w, PoolAppender &pool) const {
    const bool addStackMap = AddsStackMap();
    w.U2(static_cast<unsigned>(mc_.code.attrs.size() + (addStackMap ? 1 : 0)));
    for (const auto &a : mc_.code.attrs) {
        if (a.name == "StackMapTable") {
            if (mc_.pc->major >= kFramesVersion) {
                WriteFrames(w, a.nameIndex);
            } else {
                w.Bytes(mc_.pc->data.subspan(a.start, a.body + a.length - a.start));
            }
        } else if (a.name == "LineNumberTable") {
            WriteLineNumbers(w, a);
        } else {
            WriteLocalVariables(w, a);
        }
    }
    if (addStackMap) WriteFrames(w, pool.Utf8("StackMapTable"));
}

void Layout::WriteFrames(Writer &w, std::uint16_t nameIndex) const {
    std::vector<Frame> all = edit_.liveLocal ? WithLiveLocal(mc_.frames, *edit_.liveLocal) : mc_.frames;
    for (Frame &fr : all) fr.offset = Entry(fr.offset);
    for (const CatchAll &h : edit_.catchAlls) {
        if (!h.prologue && h.oldStart >= h.oldEnd) continue;
        Frame hf;
        hf.kind = 255;
        hf.offset = handlerAt_[h.handler];
        hf.locals = h.locals;
        hf.stack.push_back({7, edit_.throwable});
        all.push_back(hf);
    }
    const auto newInsnOffset = [&](std::uint32_t off) { return InstructionAt(off, "Uninitialized(offset)"); };
    Writer f;
    f.U2(static_cast<unsigned>(all.size()));
    std::int64_t prev = -1;
    for (const Frame &fr : all) {
        EncodeFrame(f, fr, static_cast<std::uint32_t>(std::int64_t{fr.offset} - prev - 1), newInsnOffset);
        prev = fr.offset;
    }
    w.U2(nameIndex);
    w.U4(static_cast<std::uint32_t>(f.size()));
    w.Bytes(f.out);
}

namespace {

// Copies a table attribute's header and entry count; returns a reader at the first entry.
Reader CopyTableHeader(Writer &w, const ParsedClass &pc, const Attribute &a, std::uint16_t &entries) {
    Reader r(pc.data.subspan(0, a.body + a.length), a.body);
    w.U2(a.nameIndex);
    w.U4(a.length);
    entries = r.U2();
    w.U2(entries);
    return r;
}

}  // namespace

// A line or variable starting at old 0 keeps the method-start insertions in it.
std::uint32_t Layout::RangeStart(std::uint16_t off) const { return off == 0 ? 0 : Entry(off); }

void Layout::WriteLineNumbers(Writer &w, const Attribute &a) const {
    std::uint16_t n = 0;
    Reader r = CopyTableHeader(w, *mc_.pc, a, n);
    for (unsigned i = 0; i < n; ++i) {
        const std::uint16_t start = r.U2(), line = r.U2();
        w.U2(RangeStart(start));
        w.U2(line);
    }
}

// LocalVariableTable and LocalVariableTypeTable: {start, length, name, type, index}.
void Layout::WriteLocalVariables(Writer &w, const Attribute &a) const {
    std::uint16_t n = 0;
    Reader r = CopyTableHeader(w, *mc_.pc, a, n);
    for (unsigned i = 0; i < n; ++i) {
        const std::uint16_t start = r.U2(), length = r.U2();
        const std::uint32_t newStart = RangeStart(start);
        const std::uint32_t end = std::uint32_t{start} + length;
        if (end > mc_.size() || (end != mc_.size() && mc_.index[end] < 0)) {
            throw SkipMethod("a local variable range does not end on an instruction");
        }
        w.U2(newStart);
        w.U2(RangeEnd(end) - newStart);
        w.Bytes(r.Bytes(6));
    }
}

}  // namespace martini::jvm::detail
