// Coverage counts through MPI data requests, with the buffers growing to what Martini
// says it needs (MRTE_ERROR_BUFFER_TOO_SHORT writes uiActualSize back). For clients that
// asked for coverage (IMpi::RequestCoverage); written against mpi/ only. Not for event
// paths: call them when writing results.
#pragma once

#include <MpiAPI.h>

#include <cstdint>
#include <vector>

namespace martini::clients {

// The methods covered for this client, in id order; empty when the request failed.
inline std::vector<Martini::MPI::TId> GetCoveredMethods(Martini::MPI::IMpi &mpi, Martini::MPI::TId clientId) {
    using namespace Martini::MPI;
    std::vector<TId> ids(256);
    for (int attempt = 0; attempt < 4; ++attempt) {
        SIdArray a;
        a.entries = ids.data();
        a.uiSize = static_cast<unsigned>(ids.size());
        const TResult r = mpi.GetCoveredMethods(clientId, &a);
        if (r == MRTE_ERROR_BUFFER_TOO_SHORT && a.uiActualSize > ids.size()) {
            ids.resize(a.uiActualSize);
            continue;
        }
        if (r != MRTE_RESULT_OK) return {};
        ids.resize(a.uiActualSize);
        return ids;
    }
    return {};
}

// One covered method's entries for `items` (DR_COVERAGE_*); `valid` gets the items
// given. Empty when the request failed.
inline std::vector<Martini::MPI::SCoverageEntry> GetCoverageEntries(Martini::MPI::IMpi &mpi,
                                                                    Martini::MPI::TId clientId,
                                                                    Martini::MPI::TId method,
                                                                    Martini::MPI::BitSet items,
                                                                    Martini::MPI::BitSet &valid) {
    using namespace Martini::MPI;
    std::vector<SCoverageEntry> entries(64);
    for (int attempt = 0; attempt < 4; ++attempt) {
        SCoverageInfo info;
        info.entries.entries = entries.data();
        info.entries.uiSize = static_cast<unsigned>(entries.size());
        const TResult r = mpi.GetCoverageInfo(clientId, method, items, &info);
        if (r == MRTE_ERROR_BUFFER_TOO_SHORT && info.entries.uiActualSize > entries.size()) {
            entries.resize(info.entries.uiActualSize);
            continue;
        }
        if (r != MRTE_RESULT_OK && r != MRTE_ERROR_PARTIAL_INFO) return {};
        valid = info.validData;
        entries.resize(info.entries.uiActualSize);
        return entries;
    }
    return {};
}

// A method's calls: its entry counter (CEK_ENTRY) where the runtime keeps one, else
// the count of its first block.
inline std::uint64_t CallsOf(const std::vector<Martini::MPI::SCoverageEntry> &entries) {
    using namespace Martini::MPI;
    std::uint64_t calls = 0;
    unsigned first = ~0u;
    for (const SCoverageEntry &e : entries) {
        if (e.kind == CEK_ENTRY) return e.uiCount;
        if (e.kind == CEK_BLOCK && e.uiOffset < first) {
            first = e.uiOffset;
            calls = e.uiCount;
        }
    }
    return calls;
}

}  // namespace martini::clients
