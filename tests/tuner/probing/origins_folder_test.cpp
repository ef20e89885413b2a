// The trials' origins folders: who made each, and the sweep that removes those of a tune that
// was killed, leaving any other alone.
#include "tuner/probing/origins_folder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "probes/node_watch.h"
#include "probes/nodes.h"
#include "tuner/base/proc_stat.h"
#include "tuner/base/temp_dir.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

struct Root {
  fs::path path;
  Root() {
    const auto made = make_temp_dir("tune-origins-test-");
    EXPECT_TRUE(made) << made.error();
    path = *made;
  }
  ~Root() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path folder(const std::string& name, const std::string& owner) const {
    const fs::path f = path / (std::string(k_origins_prefix) + name);
    fs::create_directories(f / "libraries");
    std::ofstream(f / "libraries" / "123") << "{}\n";  // a rank's answers, left by a kill
    if (owner != "-") std::ofstream(f / probes::k_origins_owner) << owner;
    return f;
  }
};

TEST(OriginsFolder, TheOwnerIsThisProcessAndItsStartTime) {
  Root root;
  const fs::path f = root.path / "mine";
  fs::create_directories(f);
  write_origins_owner(f);
  const auto owner = read_origins_owner(f);
  ASSERT_TRUE(owner);
  EXPECT_EQ(owner->pid, ::getpid());
  EXPECT_EQ(owner->start_ticks, read_proc_stat(::getpid())->starttime);
  EXPECT_TRUE(owner->machine.starts_with(probes::this_machine_id() + "/pid:[")) << owner->machine;
}

// A killed tune's folder goes; a live tune's, another machine's (a temporary folder shared by
// nodes), one without an owner record (an older tune's) and one of another name stay.
TEST(OriginsFolder, OnlyTheFoldersOfAGoneOwnerOnThisMachineAreSwept) {
  Root root;
  const auto self = read_proc_stat(::getpid());
  ASSERT_TRUE(self);
  const fs::path probe = root.path / "probe";
  fs::create_directories(probe);
  write_origins_owner(probe);
  const auto me = read_origins_owner(probe);
  ASSERT_TRUE(me);
  const std::string here = me->machine;  // this machine's boot and PID namespace
  const fs::path dead = root.folder("dead01", "999999999 12345 " + here + "\n");
  // This process's id with another start time: the id was reused, the owner is gone.
  const fs::path reused =
      root.folder("reuse1", std::to_string(::getpid()) + " " + std::to_string(self->starttime + 7) +
                                " " + here);
  const fs::path elsewhere = root.folder("other1", "999999999 12345 another-boot-id\n");
  const fs::path live = root.folder("live01", "");
  write_origins_owner(live);
  const fs::path empty = root.folder("empty1", "");  // the empty file older tunes wrote
  const fs::path none = root.folder("none01", "-");
  const fs::path garbage = root.folder("junk01", "x y\n");
  const fs::path other = root.path / "something-else";
  fs::create_directories(other);
  std::ofstream(other / probes::k_origins_owner) << "999999999 12345 " + here + "\n";

  EXPECT_EQ(remove_orphaned_origins(root.path), 2);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(reused));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(elsewhere));
  EXPECT_TRUE(fs::exists(empty));
  EXPECT_TRUE(fs::exists(none));
  EXPECT_TRUE(fs::exists(garbage));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_EQ(remove_orphaned_origins(root.path / "missing"), 0);  // no such root: nothing
}

}  // namespace
}  // namespace tune::tuner
