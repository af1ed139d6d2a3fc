// Coverage requests: a client asks for block counts (RequestCoverage), lists the
// methods covered for it (GetCoveredMethods) and reads one method's counts
// (GetCoverageInfo). The provider keeps the counts; the core knows which client covers
// which method (the EG_COVERAGE interest) and answers with the same result codes on
// every runtime.
#include "registry.h"

#include <algorithm>

namespace martini::core {

namespace {

constexpr BitSet kCoverageItems = DR_COVERAGE_BLOCKS | DR_COVERAGE_BRANCHES | DR_COVERAGE_TIME | DR_COVERAGE_CALLS;

}  // namespace

TResult Registry::RequestCoverage(TId clientId, BitSet items) noexcept {
    Client *client = Find(clientId);
    if (client == nullptr) return MRTE_ERROR_ILLEGAL_ID;
    if (!InInstantiateOf(*client)) return MRTE_ERROR_PHASE_FAILURE;
    // Blocks (with branches and times), or calls alone.
    const bool callsAlone = items == DR_COVERAGE_CALLS;
    if (((items & DR_COVERAGE_BLOCKS) == 0 && !callsAlone) || (items & ~kCoverageItems) != 0) {
        return MRTE_ERROR_ILLEGAL_ARGUMENT;
    }
    if ((provider_.CoverageItems() & (callsAlone ? DR_COVERAGE_CALLS : DR_COVERAGE_BLOCKS)) == 0) {
        return MRTE_ERROR_NOT_SUPPORTED;
    }
    client->coverageItems = items;
    coverageRequested_.fetch_or(items, std::memory_order_acq_rel);
    return MRTE_RESULT_OK;
}

BitSet Registry::CoverageItemsOf(ClientMask clients) const noexcept {
    BitSet items = 0;
    for (const auto &c : Clients()) {
        if (c && (clients & (ClientMask{1} << c->index)) != 0) items |= c->coverageItems;
    }
    return items;
}

TResult Registry::GetCoveredMethods(TId clientId, SIdArray *pData) noexcept {
    return Guarded([&]() -> TResult {
        const Client *client = Find(clientId);
        if (client == nullptr) return MRTE_ERROR_ILLEGAL_ID;
        if (pData == nullptr || (pData->entries == nullptr && pData->uiSize != 0)) return MRTE_ERROR_NULL_PTR;
        if (!live()) return MRTE_ERROR_PHASE_FAILURE;
        const ClientMask bit = ClientMask{1} << client->index;
        std::vector<TId> ids;
        {
            std::lock_guard lock(coverageMutex_);
            for (const auto &[id, mask] : covered_) {
                if ((mask & bit) != 0) ids.push_back(id);
            }
        }
        std::sort(ids.begin(), ids.end());
        std::copy_n(ids.begin(), std::min<std::size_t>(ids.size(), pData->uiSize), pData->entries);
        pData->uiActualSize = static_cast<unsigned int>(ids.size());
        return ids.size() > pData->uiSize ? MRTE_ERROR_BUFFER_TOO_SHORT : MRTE_RESULT_OK;
    });
}

TResult Registry::GetCoverageInfo(TId clientId, TId methodId, BitSet requested, SCoverageInfo *p) noexcept {
    return Guarded([&]() -> TResult {
        if (TResult r = CheckRequest(clientId, p, requested, kCoverageItems); r != MRTE_RESULT_OK) return r;
        if (p->entries.entries == nullptr && p->entries.uiSize != 0) return MRTE_ERROR_NULL_PTR;
        // Covered for this client: its bit in the method's EG_COVERAGE interest.
        const ClientMask bit = ClientMask{1} << Find(clientId)->index;
        {
            InterestCache::const_accessor hit;
            if (!interest_[EG_COVERAGE].find(hit, methodId) || (hit->second & bit) == 0) {
                return MRTE_ERROR_ILLEGAL_ID;
            }
        }
        CoverageFacts f;
        if (TResult r = provider_.DescribeCoverage(methodId, requested, f); r != MRTE_RESULT_OK) return r;
        BitSet valid = requested & f.given;
        if ((valid & DR_COVERAGE_BLOCKS) == 0) valid &= ~DR_COVERAGE_TIME;  // times ride on the blocks
        std::vector<SCoverageEntry> entries;
        entries.reserve(f.entries.size());
        for (SCoverageEntry e : f.entries) {
            const BitSet item = e.kind == CEK_BRANCH ? DR_COVERAGE_BRANCHES
                                : e.kind == CEK_ENTRY  ? DR_COVERAGE_BLOCKS | DR_COVERAGE_CALLS
                                                       : DR_COVERAGE_BLOCKS;
            if ((valid & item) == 0) continue;
            if ((valid & DR_COVERAGE_TIME) == 0) e.uiTimeNs = 0;
            entries.push_back(e);
        }
        p->validData = DR_NONE;
        SCoverageEntryArray &to = p->entries;
        std::copy_n(entries.begin(), std::min<std::size_t>(entries.size(), to.uiSize), to.entries);
        to.uiActualSize = static_cast<unsigned int>(entries.size());
        if (entries.size() > to.uiSize) return MRTE_ERROR_BUFFER_TOO_SHORT;
        p->validData = valid;
        return valid == requested ? MRTE_RESULT_OK : MRTE_ERROR_PARTIAL_INFO;
    });
}

}  // namespace martini::core
