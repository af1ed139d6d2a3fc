// martini-replay: see replay_main.cpp.
#include "tools.h"

int main(int argc, char **argv) { return martini::tools::ReplayMain(argc, argv); }
