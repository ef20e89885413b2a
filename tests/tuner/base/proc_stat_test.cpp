// parse_proc_stat: the one reader of /proc/PID/stat, on the line of a live process and on the
// lines that break naive parsers (a command name with spaces and ')', a cut line).
#include <gtest/gtest.h>
#include <unistd.h>

#include "tuner/base/proc_stat.h"

namespace tune::tuner {
namespace {

TEST(ProcStat, FieldsAreReadAfterTheLastParenthesisOfTheName) {
  // A process named "a) b (c" (prctl PR_SET_NAME allows any 15 bytes): proc(5)'s fields after it.
  const std::string line =
      "4242 (a) b (c) S 17 4242 4242 0 -1 4194560 120 0 0 0 31 7 5 2 20 0 1 0 987654 1234 56 "
      "18446744073709551615\n";
  const auto st = parse_proc_stat(line);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 17);
  EXPECT_EQ(st->utime, 31u);
  EXPECT_EQ(st->stime, 7u);
  EXPECT_EQ(st->cutime, 5u);
  EXPECT_EQ(st->cstime, 2u);
  EXPECT_EQ(st->starttime, 987654u);
}

TEST(ProcStat, ACutOrForeignLineIsNone) {
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("4242 (x) S 17 4242"));  // cut before field 22
  EXPECT_FALSE(parse_proc_stat("no parenthesis here"));
  EXPECT_FALSE(parse_proc_stat("1 (x) S notanumber 1 1 0 -1 0 0 0 0 0 1 1 1 1 20 0 1 0 5"));
}

TEST(ProcStat, ThisProcessIsReadAndAGoneOneIsNone) {
  const auto self = read_proc_stat(getpid());
  ASSERT_TRUE(self);
  EXPECT_EQ(self->ppid, getppid());
  EXPECT_EQ(self->state, 'R');  // it is running this very read
  EXPECT_GT(self->starttime, 0u);
  EXPECT_FALSE(read_proc_stat(-1));
}

}  // namespace
}  // namespace tune::tuner
