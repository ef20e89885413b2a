// The processes below one process, read from /proc. Plain POSIX and the standard library only:
// the keeper (tuner/launch/keeper.h) is linked statically with it, so that starting one, once per
// trial, costs no dynamic linking.
#pragma once

#include <sys/types.h>

#include <vector>

namespace tune::tuner {

// Every descendant pid of `root` (children, grandchildren, ...), read from /proc/*/stat.
std::vector<pid_t> descendants(pid_t root);

}  // namespace tune::tuner
