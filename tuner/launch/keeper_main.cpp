#include "tuner/launch/keeper.h"

int main(int argc, char** argv) { return tune::tuner::run_keeper(argc, argv); }
