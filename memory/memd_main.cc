// pandora-memd: the memory-node daemon. Everything lives in memory/memd.cc.
#include "memory/memd.h"

int main(int argc, char** argv) { return pandora::memd::memd_main(argc, argv); }
