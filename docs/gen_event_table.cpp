// Prints docs/events.md from the event catalog (MARTINI_MPI_EVENTS) and the data items
// (MARTINI_MPI_DATA_ITEMS), so the tables in the docs are the catalog. The test
// 'docs-event-table' fails when they differ:
//   build/docs/gen-event-table > docs/events.md
#include <MpiAPI.h>

#include <cstdio>
#include <string>

using namespace Martini::MPI;

namespace {

struct ItemName {
    BitSet item;
    const char *name;
};
const ItemName kItems[] = {
#define MARTINI_X_ITEM(Name, Bit) {Name, #Name},
    MARTINI_MPI_DATA_ITEMS(MARTINI_X_ITEM)
#undef MARTINI_X_ITEM
};

// A group added to EEventGroup needs its row in kGroups below.
static_assert(EG_LAST == EG_COVERAGE + 1, "a new event group: add it to kGroups");

struct Group {
    EEventGroup group;
    const char *name, *filter, *filterData, *note;
};
const Group kGroups[] = {
    {EG_CALL_GRAPH, "EG_CALL_GRAPH", "ICallGraphFilter", "SCallGraphFilterData", ""},
    {EG_HEAP, "EG_HEAP", "IHeapFilter", "SHeapFilterData", ""},
    {EG_MONITOR, "EG_MONITOR", "IMonitorFilter", "SMonitorFilterData", ""},
    {EG_THREAD_INTERACTION, "EG_THREAD_INTERACTION", "IThreadInteractionFilter", "SThreadInteractionFilterData", ""},
    {EG_COVERAGE, "EG_COVERAGE", "ICoverageFilter", "SCoverageFilterData",
     "none: the methods whose blocks the runtime counts (`IMpi::RequestCoverage`), read with "
     "`IMpi::GetCoverageInfo`"},
};

const char *GroupName(EEventGroup g) {
    for (const auto &row : kGroups) {
        if (row.group == g) return row.name;
    }
    return "(none: always on)";
}

// The events of group `g`, or `note` when it has none.
std::string EventsOf(EEventGroup g, const char *note) {
    std::string out;
#define MARTINI_X_EVENT(Name, Const, Number, Group, ItemMask, Shape) \
    if ((Group) == g) out += (out.empty() ? "" : ", ") + std::string(#Name);
    MARTINI_MPI_EVENTS(MARTINI_X_EVENT)
#undef MARTINI_X_EVENT
    return out.empty() ? note : out;
}

// The events that can carry `item`.
std::string CarriedBy(BitSet item) {
    std::string out;
#define MARTINI_X_EVENT(Name, Const, Number, Group, ItemMask, Shape) \
    if (((ItemMask) & item) != 0) out += (out.empty() ? "" : ", ") + std::string(#Name);
    MARTINI_MPI_EVENTS(MARTINI_X_EVENT)
#undef MARTINI_X_EVENT
    return out;
}

std::string Items(BitSet items) {
    std::string out;
    for (const auto &i : kItems) {
        if (items & i.item) out += (out.empty() ? "" : ", ") + std::string("`") + i.name + "`";
    }
    return out.empty() ? "none" : out;
}

}  // namespace

int main() {
    std::printf("# MPI events\n\n"
                "Generated from the event catalog `MARTINI_MPI_EVENTS` in "
                "`mpi/include/martini/mpi/events.h` and the data items `MARTINI_MPI_DATA_ITEMS` in "
                "`mpi/include/martini/mpi/base.h` by `docs/gen_event_table.cpp`; do not edit.\n\n"
                "| event | constant | number | observer | group | data items it can carry |\n"
                "|---|---|---|---|---|---|\n");
#define MARTINI_X_ROW(Name, Const, Number, Group, ItemMask, Shape)                                         \
    std::printf("| %s | `%s` | %d | `I%sEventObserver::HandleEvent(%s)` | %s | %s |\n", #Name, #Const, \
                Number, #Name, std::string(#Shape) == "DATA" ? "S" #Name "EventData &" : "",                \
                GroupName(Group), Items(ItemMask).c_str());
    MARTINI_MPI_EVENTS(MARTINI_X_ROW)
#undef MARTINI_X_ROW

    std::printf("\n## Event groups\n\n"
                "A filter is asked once per element of its group, when the runtime instruments it "
                "(`IMpi::SetEventGroupFilter`); events without a group are always on.\n\n"
                "| group | events | filter | filter data |\n|---|---|---|---|\n");
    for (const auto &g : kGroups) {
        std::printf("| %s | %s | `%s` | `%s` |\n", g.name, EventsOf(g.group, g.note).c_str(), g.filter, g.filterData);
    }

    std::printf("\n## Data items\n\n"
                "Each `DR_*` item is one bit of a `BitSet`: what an observer's `EventDataTypes()` asks "
                "for, and what a data request (`IMpi::GetXInfo`) is asked for and says it gave "
                "(`validData`). The bits are part of the ABI: append-only.\n\n"
                "| item | bit | events that carry it |\n|---|---|---|\n");
    std::string requestsOnly;
    for (const auto &i : kItems) {
        int bit = 0;
        while ((BitSet(1) << bit) != i.item) ++bit;
        const std::string events = CarriedBy(i.item);
        std::printf("| `%s` | %d | %s |\n", i.name, bit, events.empty() ? "none" : events.c_str());
        if (events.empty()) requestsOnly += (requestsOnly.empty() ? "" : ", ") + std::string("`") + i.name + "`";
    }
    std::printf("\nItems no event carries are answered by data requests alone: %s. The coverage items "
                "(`DR_COVERAGE_*`) are answered by `IMpi::GetCoverageInfo` for the methods a client "
                "covers (`IMpi::RequestCoverage`, the `EG_COVERAGE` filter).\n",
                requestsOnly.c_str());
    return 0;
}
