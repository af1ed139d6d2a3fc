// Holds the ABI numbers of the client API as released: every event's TEventType value
// and every data item's bit. Clients already built carry these numbers, so a row of
// MARTINI_MPI_EVENTS or MARTINI_MPI_DATA_ITEMS that changes or reuses one breaks
// them silently. New rows are appended to abi_snapshot.txt by hand, deliberately.
//   abi_snapshot_test SNAPSHOT_FILE
#include <MpiAPI.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

using namespace Martini::MPI;

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: abi_snapshot_test SNAPSHOT_FILE\n");
        return 2;
    }
    std::map<std::string, long> current;
#define MARTINI_X_EVENT(Name, Const, Number, Group, Items, Shape) current[#Const] = Const;
    MARTINI_MPI_EVENTS(MARTINI_X_EVENT)
#undef MARTINI_X_EVENT
#define MARTINI_X_ITEM(Name, Bit) current[#Name] = Bit;
    MARTINI_MPI_DATA_ITEMS(MARTINI_X_ITEM)
#undef MARTINI_X_ITEM

    std::ifstream in(argv[1]);
    if (!in) {
        std::fprintf(stderr, "cannot read the snapshot '%s'\n", argv[1]);
        return 2;
    }
    std::map<std::string, long> released;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        std::string name;
        long number = -1;
        if (!(fields >> name >> number)) {
            std::fprintf(stderr, "snapshot: cannot read the line '%s'\n", line.c_str());
            return 2;
        }
        released[name] = number;
    }

    int failed = 0, passed = 0;
    for (const auto &[name, number] : released) {
        const auto it = current.find(name);
        if (it == current.end()) {
            std::printf("FAIL %s (%ld) was released and is gone: numbers are never removed\n", name.c_str(), number);
            ++failed;
        } else if (it->second != number) {
            std::printf("FAIL %s is %ld, released as %ld: numbers are append-only (give a new row the next "
                        "unused number instead)\n", name.c_str(), it->second, number);
            ++failed;
        } else {
            ++passed;
        }
    }
    for (const auto &[name, number] : current) {
        if (!released.count(name)) {
            std::printf("FAIL %s (%ld) is not in the snapshot: append \"%s %ld\" to %s once its number is final\n",
                        name.c_str(), number, name.c_str(), number, argv[1]);
            ++failed;
        }
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
