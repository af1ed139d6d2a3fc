// martini-replay: see replay_main.cpp.
#include "tools.h"

int main(int argc, char **argv) {
    return martini::tools::ReplayMain(martini::tools::ProgramName(argc > 0 ? argv[0] : nullptr), argc, argv);
}
