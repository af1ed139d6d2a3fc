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
#define MARTINI_ITEM(x) {x, #x}
const ItemName kItems[] = {
    MARTINI_ITEM(DR_METHOD_ID), MARTINI_ITEM(DR_METHOD_NAME), MARTINI_ITEM(DR_METHOD_SIGNATURE),
    MARTINI_ITEM(DR_METHOD_LINE_NUMBERS), MARTINI_ITEM(DR_METHOD_ACCESS_TYPE), MARTINI_ITEM(DR_CLASS_ID),
    MARTINI_ITEM(DR_CLASS_NAME), MARTINI_ITEM(DR_SOURCE_FILE_NAME), MARTINI_ITEM(DR_MODULE_ID),
    MARTINI_ITEM(DR_MODULE_NAME), MARTINI_ITEM(DR_THREAD_ID), MARTINI_ITEM(DR_THREAD_NAME),
    MARTINI_ITEM(DR_THREAD_GROUP), MARTINI_ITEM(DR_THREAD_PARENT_ID), MARTINI_ITEM(DR_THREAD_STATE),
    MARTINI_ITEM(DR_VM_CALL_STACK), MARTINI_ITEM(DR_OBJECT_ID), MARTINI_ITEM(DR_OBJECT_SIZE),
    MARTINI_ITEM(DR_ARRAY_INFO), MARTINI_ITEM(DR_CPU_TIMESTAMP), MARTINI_ITEM(DR_THREAD_CPU_TIME),
    MARTINI_ITEM(DR_METHOD_CODE), MARTINI_ITEM(DR_CLASS_METHODS), MARTINI_ITEM(DR_MONITOR_OWNER_THREAD_ID),
    MARTINI_ITEM(DR_MONITOR_TIMEOUT), MARTINI_ITEM(DR_OBJECT_REFERENCES), MARTINI_ITEM(DR_INTERACTION_TYPE),
    MARTINI_ITEM(DR_ALLOC_LOCATION), MARTINI_ITEM(DR_CODE_NAME), MARTINI_ITEM(DR_COMMAND),
    MARTINI_ITEM(DR_MOVED_REFERENCES), MARTINI_ITEM(DR_LINE_NUMBER),
};
#undef MARTINI_ITEM

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
    BitSet named = 0;
    for (const auto &i : kItems) {
        if (items & i.item) out += (out.empty() ? "" : ", ") + std::string("`") + i.name + "`";
        named |= i.item;
    }
    if ((items & ~named) != 0) return "(an item without a name: add it to gen_event_table.cpp)";
    return out.empty() ? "none" : out;
}

}  // namespace

int main() {
    std::printf("# MPI events\n\n"
                "Generated from the event catalog `MARTINI_MPI_EVENTS` in "
                "`mpi/include/martini/mpi/events.h` by `docs/gen_event_table.cpp`; do not edit.\n\n"
                "| event | constant | observer | group | data items it can carry |\n"
                "|---|---|---|---|---|\n");
#define MARTINI_X_ROW(Name, Const, Group, ItemMask, Shape)                                         \
    std::printf("| %s | `%s` | `I%sEventObserver::HandleEvent(%s)` | %s | %s |\n", #Name, #Const, \
                #Name, std::string(#Shape) == "DATA" ? "S" #Name "EventData &" : "",                \
                GroupName(Group), Items(ItemMask).c_str());
    MARTINI_MPI_EVENTS(MARTINI_X_ROW)
#undef MARTINI_X_ROW
    return 0;
}
