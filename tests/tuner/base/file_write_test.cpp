// Files written whole (base/file_write.h): the new text or the old file, never half of one, no
// temporary file left behind, and a failure named by its step and cause.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/common/test_support.h"
#include "tuner/base/file_write.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;
using test_support::read_file;
using test_support::write_file;

class FileWriteTest : public test_support::TempDirTest {
 protected:
  FileWriteTest() : TempDirTest("tune-filewrite-") {}
  std::size_t entries() const {
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator(m_dir), fs::directory_iterator()));
  }
};

TEST_F(FileWriteTest, ReplacesTheWholeFileAndKeepsItsMode) {
  const auto path = m_dir / "out.txt";
  ASSERT_TRUE(write_file_atomically(path, "first\n"));
  EXPECT_EQ(read_file(path), "first\n");
  fs::permissions(path, fs::perms(0600));
  ASSERT_TRUE(write_file_atomically(path, "second\n"));
  EXPECT_EQ(read_file(path), "second\n");
  EXPECT_EQ(fs::status(path).permissions(), fs::perms(0600));
  EXPECT_EQ(entries(), 1u);  // no temporary file beside it
}

TEST_F(FileWriteTest, AScriptIsExecutableWhereReadable) {
  const auto path = m_dir / "run.sh";
  write_file(path, "old\n");
  fs::permissions(path, fs::perms(0640));
  ASSERT_TRUE(write_file_atomically(path, "echo hi\n", {.executable = true}));
  EXPECT_EQ(fs::status(path).permissions(), fs::perms(0750));
}

TEST_F(FileWriteTest, WithoutReplaceAnExistingFileStaysAsItWas) {
  const auto path = write_file(m_dir / "kept.txt", "old\n");
  const auto r = write_file_atomically(path, "new\n", {.replace = false});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), "cannot create the file: File exists");
  EXPECT_EQ(read_file(path), "old\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(FileWriteTest, ASymbolicLinkIsWrittenThroughAndKept) {
  write_file(m_dir / "target.txt", "old\n");
  fs::create_symlink("target.txt", m_dir / "link.txt");
  ASSERT_TRUE(write_file_atomically(m_dir / "link.txt", "new\n"));
  EXPECT_TRUE(fs::is_symlink(m_dir / "link.txt"));
  EXPECT_EQ(read_file(m_dir / "target.txt"), "new\n");
}

TEST_F(FileWriteTest, FailuresNameTheStepAndTheCause) {
  auto r = write_file_atomically(m_dir / "missing" / "x.txt", "x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), "cannot create the file: No such file or directory");
  fs::create_directories(m_dir / "folder");
  r = write_file_atomically(m_dir / "folder", "x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), "cannot create the file: Is a directory");
  EXPECT_EQ(entries(), 1u);
  r = write_into_existing("/dev/full", "x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), "cannot write the file: No space left on device");
  EXPECT_TRUE(write_into_existing("/dev/null", "x"));
}

}  // namespace
}  // namespace tune::tuner
