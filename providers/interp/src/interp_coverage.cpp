// Coverage in the interpreter provider: per covered method, a counter for each block
// (a line-table row, QII's "basic block number"), which the interpreter increments
// itself or through martini_bb_count, and block times from martini_bb_time. The
// counts stay here; a client reads them with GetCoverageInfo.
#include "interp_provider.h"

#include "martini/core/clock.h"

#include <algorithm>
#include <atomic>

namespace martini::interp {

using namespace Martini::MPI;

long MethodRecord::BlockAt(std::uint32_t offset) const noexcept {
    if (lines.empty()) return offset == 0 ? 0 : -1;
    const auto it = std::lower_bound(lines.begin(), lines.end(), offset,
                                     [](const SLineNumberTableEntry &e, std::uint32_t o) { return e.uiOffset < o; });
    return it != lines.end() && it->uiOffset == offset ? static_cast<long>(it - lines.begin()) : -1;
}

bool InterpProvider::CallsWanted() const noexcept {
    return core_ != nullptr && (core_->HasObservers(EV_METHOD_ENTER) || core_->HasObservers(EV_METHOD_LEAVE));
}

bool InterpProvider::CoverageWanted() const noexcept {
    return core_ != nullptr && core_->CoverageRequested() != 0;
}

// At registration, once: which clients cover the method, and its counters if any do.
void InterpProvider::StartCoverage(MethodRecord &m, const ClassRecord &c) {
    const BitSet requested = core_->CoverageRequested();
    if (requested == 0) return;
    SCoverageFilterData filter{c.name.c_str(), m.name.c_str(), m.signature.c_str(), m.sourceFile.c_str()};
    const ClientMask mask = core_->CoverageInterest(m.id, filter);
    if (mask == 0) return;
    m.blocks = std::max<std::size_t>(m.lines.size(), 1);
    m.counts = std::make_unique<std::uint64_t[]>(m.blocks);
    if ((requested & DR_COVERAGE_TIME) != 0) m.timesNs = std::make_unique<std::uint64_t[]>(m.blocks);
    m.coverage = mask;  // set last: the counters exist before anyone sees a covered method
}

martini_status InterpProvider::BlockCount(martini_method_id id, std::uint32_t offset, std::uint64_t n,
                                          std::string &error) {
    const MethodRecord *m = FindMethod(id);
    if (m == nullptr) {
        error = "method id " + std::to_string(id) + " was not registered (martini_method_register)";
        return MARTINI_E_UNKNOWN_ID;
    }
    if (m->coverage == 0) return MARTINI_OK;  // nobody covers it: nothing to count
    const long block = m->BlockAt(offset);
    if (block < 0) {
        error = "offset " + std::to_string(offset) + " starts no row of method " + std::to_string(id) +
                "'s line table (" + m->name + ", " + std::to_string(m->lines.size()) + " rows)";
        return MARTINI_E_ARGUMENT;
    }
    std::atomic_ref<std::uint64_t>(m->counts[block]).fetch_add(n, std::memory_order_relaxed);
    return MARTINI_OK;
}

void InterpProvider::CloseTimedBlock(ThreadRecord &t, std::uint64_t nowNs) noexcept {
    ThreadRecord::TimedBlock &open = t.timed;
    if (open.method == nullptr) return;
    std::atomic_ref<std::uint64_t>(open.method->timesNs[open.block])
        .fetch_add(nowNs - std::min(nowNs, open.sinceNs), std::memory_order_relaxed);
    open.method = nullptr;
}

martini_status InterpProvider::BlockTime(ThreadRecord &t, std::uint32_t offset, std::string &error) {
    const std::uint64_t now = core::Clock::NowNs();
    CloseTimedBlock(t, now);
    if (t.frames.empty()) {
        error = "thread " + std::to_string(t.id) + " has no frame: the block's method is the innermost "
                "frame's (martini_enter first)";
        return MARTINI_E_STACK;
    }
    const MethodRecord *m = t.frames.back().method;
    if (m->coverage == 0 || m->timesNs == nullptr) return MARTINI_OK;  // no client times its blocks
    const long block = m->BlockAt(offset);
    if (block < 0) {
        error = "offset " + std::to_string(offset) + " starts no row of method " + std::to_string(m->id) +
                "'s line table (" + m->name + ")";
        return MARTINI_E_ARGUMENT;
    }
    t.timed = {m, static_cast<std::size_t>(block), t.frames.size(), now};
    return MARTINI_OK;
}

BitSet InterpProvider::CoverageItems() const noexcept { return DR_COVERAGE_BLOCKS | DR_COVERAGE_TIME; }

TResult InterpProvider::DescribeCoverage(TId id, BitSet, core::CoverageFacts &f) noexcept {
    const MethodRecord *m = FindMethod(id);
    if (m == nullptr || m->coverage == 0) return MRTE_ERROR_ILLEGAL_ID;
    f.given = DR_COVERAGE_BLOCKS | (m->timesNs != nullptr ? DR_COVERAGE_TIME : 0);
    f.entries.reserve(m->blocks);
    for (std::size_t i = 0; i < m->blocks; ++i) {
        SCoverageEntry e{};
        e.kind = CEK_BLOCK;
        if (!m->lines.empty()) {
            e.uiOffset = m->lines[i].uiOffset;
            e.uiLineNumber = m->lines[i].uiLineNumber;
        }
        e.uiCount = std::atomic_ref<std::uint64_t>(m->counts[i]).load(std::memory_order_relaxed);
        if (m->timesNs != nullptr) {
            e.uiTimeNs = std::atomic_ref<std::uint64_t>(m->timesNs[i]).load(std::memory_order_relaxed);
        }
        f.entries.push_back(e);
    }
    return MRTE_RESULT_OK;
}

}  // namespace martini::interp
