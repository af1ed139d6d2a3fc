// Prints docs/events.md from the event catalog (MARTINI_MPI_EVENTS), so the table in
// the docs is the catalog. The test 'docs-event-table' fails when they differ:
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

const char *GroupName(EEventGroup g) {
    switch (g) {
        case EG_CALL_GRAPH: return "EG_CALL_GRAPH";
        case EG_HEAP: return "EG_HEAP";
        case EG_MONITOR: return "EG_MONITOR";
        case EG_THREAD_INTERACTION: return "EG_THREAD_INTERACTION";
        default: return "(none: always on)";
    }
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
                "`mpi/include/martini/mpi/events.h` by `docs/gen_event_table.cpp`; do not edit.\n\n"
                "| event | constant | number | observer | group | data items it can carry |\n"
                "|---|---|---|---|---|---|\n");
#define MARTINI_X_ROW(Name, Const, Number, Group, ItemMask, Shape)                                         \
    std::printf("| %s | `%s` | %d | `I%sEventObserver::HandleEvent(%s)` | %s | %s |\n", #Name, #Const, \
                Number, #Name, std::string(#Shape) == "DATA" ? "S" #Name "EventData &" : "",                \
                GroupName(Group), Items(ItemMask).c_str());
    MARTINI_MPI_EVENTS(MARTINI_X_ROW)
#undef MARTINI_X_ROW
    return 0;
}
