// The knobs a program hides behind flags its command does not type (tuner/init/help_reader.h):
// option lines of argparse, click and GNU getopt help texts as they print them, the flags among
// them that size a pool, and the help read from real programs: an argparse script run by
// Debian's python3 and xz (-T, --threads=NUM).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tuner/init/help_reader.h"

namespace tune::tuner {
namespace {

namespace fs = std::filesystem;

const HelpOption* option(const std::vector<HelpOption>& options, const std::string& flag) {
  const auto it = std::find_if(options.begin(), options.end(),
                               [&](const HelpOption& o) { return o.flag == flag; });
  return it == options.end() ? nullptr : &*it;
}

const PoolFlag* pool(const std::vector<PoolFlag>& flags, const std::string& flag) {
  const auto it = std::find_if(flags.begin(), flags.end(),
                               [&](const PoolFlag& f) { return f.option.flag == flag; });
  return it == flags.end() ? nullptr : &*it;
}

// Python 3.11's argparse with ArgumentDefaultsHelpFormatter, 80 columns.
constexpr const char* k_argparse =
    "usage: train.py [-h] [--epochs EPOCHS] [-w WORKERS] [--prefetch-factor PREFETCH_FACTOR]\n"
    "                [--intra-op-threads INTRA_OP_THREADS] [--data DATA] [--seed SEED]\n"
    "                [--backend {gloo,nccl}]\n"
    "\n"
    "A DDP training script.\n"
    "\n"
    "options:\n"
    "  -h, --help            show this help message and exit\n"
    "  --epochs EPOCHS       epochs to train (default: 1)\n"
    "  -w WORKERS, --workers WORKERS\n"
    "                        DataLoader worker processes per rank (default: 8)\n"
    "  --prefetch-factor PREFETCH_FACTOR\n"
    "                        batches each worker loads ahead of time (default:\n"
    "                        None)\n"
    "  --intra-op-threads INTRA_OP_THREADS\n"
    "                        torch.set_num_threads; -1 keeps torch's own\n"
    "                        choice (default: -1)\n"
    "  --data DATA           folder of the data set, read by the loader's\n"
    "                        workers (default: ./data)\n"
    "  --seed SEED           random seed (default: 0)\n"
    "  --backend {gloo,nccl}\n"
    "                        how ranks talk: threads or processes (default: gloo)\n";

TEST(HelpReader, ReadsArgparseOptionsWithWrappedHelpAndDefaults) {
  const auto options = parse_help_options(k_argparse);
  ASSERT_EQ(options.size(), 8u);
  const HelpOption* w = option(options, "--workers");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->spellings, (std::vector<std::string>{"-w", "--workers"}));
  EXPECT_EQ(w->metavar, "WORKERS");
  EXPECT_FALSE(w->equals);
  EXPECT_EQ(w->help, "DataLoader worker processes per rank (default: 8)");
  EXPECT_EQ(w->default_text, "8");
  EXPECT_EQ(option(options, "--prefetch-factor")->default_text, "None");
  EXPECT_EQ(option(options, "--intra-op-threads")->help,
            "torch.set_num_threads; -1 keeps torch's own choice (default: -1)");
  EXPECT_EQ(option(options, "--intra-op-threads")->default_text, "-1");
  EXPECT_EQ(option(options, "--help")->metavar, "");
  EXPECT_EQ(option(options, "--backend")->metavar, "{gloo,nccl}");

  const auto flags = pool_flags(options);
  ASSERT_EQ(flags.size(), 3u);  // not --data (a folder), --seed, --backend (words), --help
  EXPECT_EQ(pool(flags, "--workers")->topic, "workers");
  EXPECT_TRUE(pool(flags, "--workers")->by_name);
  EXPECT_EQ(pool(flags, "--prefetch-factor")->topic, "prefetch");
  EXPECT_EQ(pool(flags, "--intra-op-threads")->topic, "threads");
}

// click 8's help: metavar types, defaults in brackets, help wrapped under its column.
TEST(HelpReader, ReadsClickOptions) {
  const std::string text =
      "Usage: prep.py [OPTIONS] SRC\n"
      "\n"
      "Options:\n"
      "  -n, --num-workers INTEGER   Worker processes that decode images.  [default:\n"
      "                              4]\n"
      "  --chunk-size INTEGER        Images per task handed to the pool.  [default: 64]\n"
      "  --out PATH                  Where the shards go.\n"
      "  -v, --verbose               Print each shard.\n"
      "  --help                      Show this message and exit.\n";
  const auto options = parse_help_options(text);
  ASSERT_EQ(options.size(), 5u);
  const HelpOption* n = option(options, "--num-workers");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->metavar, "INTEGER");
  EXPECT_EQ(n->default_text, "4");
  EXPECT_EQ(option(options, "--chunk-size")->default_text, "64");
  const auto flags = pool_flags(options);
  ASSERT_EQ(flags.size(), 1u);  // not --chunk-size: "the pool" names no pool it sizes
  EXPECT_EQ(flags[0].option.flag, "--num-workers");
  EXPECT_EQ(flags[0].topic, "workers");
}

// GNU getopt style (xz 5.4, GNU make 4.3): --flag=VALUE, an optional value in brackets, the
// default in prose.
TEST(HelpReader, ReadsGetoptOptions) {
  const std::string text =
      "Usage: xz [OPTION]... [FILE]...\n"
      "  -0 ... -9           compression preset; default is 6; take compressor *and*\n"
      "                      decompressor memory usage into account before using 7-9!\n"
      "  -T, --threads=NUM   use at most NUM threads; the default is 1; set to 0\n"
      "                      to use as many threads as there are processor cores\n"
      "  -k, --keep          keep (don't delete) input files\n"
      "  -j [N], --jobs[=N]          Allow N jobs at once; infinite jobs with no arg.\n"
      "  -l [N], --load-average[=N], --max-load[=N]\n"
      "                              Don't start multiple jobs unless load is below N.\n"
      "\t--nproc=N\tprocesses to fork\n";
  const auto options = parse_help_options(text);
  const HelpOption* t = option(options, "--threads");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->spellings, (std::vector<std::string>{"-T", "--threads"}));
  EXPECT_EQ(t->metavar, "NUM");
  EXPECT_TRUE(t->equals);
  EXPECT_EQ(t->default_text, "1");
  EXPECT_EQ(option(options, "--jobs")->metavar, "N");
  EXPECT_EQ(option(options, "--load-average")->spellings.size(), 3u);
  const auto flags = pool_flags(options);
  ASSERT_NE(pool(flags, "--threads"), nullptr);
  EXPECT_EQ(pool(flags, "--jobs")->topic, "jobs");
  EXPECT_EQ(pool(flags, "--nproc")->topic, "processes");
  // --load-average's help speaks of jobs: a pool by its help, not its name.
  ASSERT_NE(pool(flags, "--load-average"), nullptr);
  EXPECT_FALSE(pool(flags, "--load-average")->by_name);
  EXPECT_EQ(pool(flags, "--keep"), nullptr);
}

// sysbench 1.0: "--threads=N  number of threads to use [1]", the default in brackets at the end.
TEST(HelpReader, ABracketedNumberAtTheEndIsTheDefault) {
  const auto options = parse_help_options(
      "General options:\n"
      "  --threads=N                     number of threads to use [1]\n"
      "  --thread-stack-size=SIZE        size of stack per thread [64K]\n"
      "  --report-checkpoints=[LIST,...] dump full statistics at specified points []\n");
  ASSERT_EQ(options.size(), 3u);
  EXPECT_EQ(options[0].default_text, "1");
  EXPECT_EQ(options[0].metavar, "N");
  EXPECT_EQ(options[2].default_text, "");
  // A stack size is a property of each thread, not a count of them: only --threads sizes a pool
  // (tune init on sysbench listed --thread-stack-size as a thread knob).
  const auto flags = pool_flags(options);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].option.spellings.front(), "--threads");
}

TEST(HelpReader, HostileHelpIsBoundedAndPrintable) {
  std::string text = "  --workers N  \x1b[2Jworkers " + std::string(5000, 'x') + "\n";
  const auto options = parse_help_options(text);
  ASSERT_EQ(options.size(), 1u);
  EXPECT_LE(options[0].help.size(), 403u);
  EXPECT_EQ(options[0].help.find('\x1b'), std::string::npos);
  std::string many;
  for (int i = 0; i < 2000; ++i) many += "  --opt" + std::to_string(i) + " N  help\n";
  EXPECT_EQ(parse_help_options(many).size(), 500u);
}

TEST(HelpReader, AsksTheScriptNotTheInterpreter) {
  EXPECT_EQ(help_argv({"/usr/bin/python3", "-u", "/x/train.py", "--epochs", "1"}),
            (std::vector<std::string>{"/usr/bin/python3", "-u", "/x/train.py", "--help"}));
  EXPECT_EQ(help_argv({"python3", "-X", "dev", "-m", "pkg.train", "--lr", "1"}),
            (std::vector<std::string>{"python3", "-X", "dev", "-m", "pkg.train", "--help"}));
  EXPECT_TRUE(help_argv({"python3", "-c", "print(1)"}).empty());
  EXPECT_EQ(help_argv({"/usr/bin/xz", "-k", "f"}),
            (std::vector<std::string>{"/usr/bin/xz", "--help"}));
}

TEST(HelpReader, ReadsARealArgparseScriptsHelp) {
  ASSERT_TRUE(fs::exists("/usr/bin/python3"));
  char dir[] = "/tmp/tune-help-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string script = std::string(dir) + "/train.py";
  std::ofstream(script) << "import argparse, os\n"
                           "p = argparse.ArgumentParser()\n"
                           "p.add_argument('--epochs', type=int, default=1)\n"
                           "p.add_argument('--num-workers', type=int, default=os.cpu_count(),\n"
                           "               help='multiprocessing workers (default: %(default)s)')\n"
                           "args = p.parse_args()\n"
                           "open('ran', 'w').write('the script ran')\n";
  const ProgramHelp help = read_program_help({"/usr/bin/python3", script, "--epochs", "3"}, 5);
  EXPECT_TRUE(help.ran) << help.why_not;
  ASSERT_EQ(help.pool.size(), 1u);
  EXPECT_EQ(help.pool[0].option.flag, "--num-workers");
  EXPECT_EQ(help.pool[0].option.default_text,
            std::to_string(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))));
  EXPECT_FALSE(fs::exists(std::string(dir) + "/ran"));
  fs::remove_all(dir);
}

// A program that would run instead of printing its help is not asked: a Python script that
// imports no argument parser, a program whose file names no help (hpcc runs its benchmark).
TEST(HelpReader, AProgramThatWouldRunInsteadIsNotAsked) {
  char dir[] = "/tmp/tune-help-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string script = std::string(dir) + "/job.py";
  std::ofstream(script) << "import sys\nopen(sys.argv[0] + '.ran', 'w').write('ran')\n";
  const ProgramHelp py = read_program_help({"/usr/bin/python3", script}, 5);
  EXPECT_FALSE(py.ran);
  EXPECT_EQ(py.why_not,
            "the script imports no argument parser (argparse, click, ...): it would run instead");
  const std::string native = std::string(dir) + "/job.sh";
  std::ofstream(native) << "#!/bin/sh\ntouch \"$0.ran\"\n";
  fs::permissions(native, fs::perms::owner_all);
  const ProgramHelp sh = read_program_help({native}, 5);
  EXPECT_FALSE(sh.ran);
  EXPECT_EQ(sh.why_not, "the program's file names no help option: it would run instead");
  EXPECT_FALSE(fs::exists(script + ".ran"));
  EXPECT_FALSE(fs::exists(native + ".ran"));
  fs::remove_all(dir);
}

TEST(HelpReader, ReadsANativeProgramsHelp) {
  ASSERT_TRUE(fs::exists("/usr/bin/xz"));
  const ProgramHelp help = read_program_help({"/usr/bin/xz", "-k", "data"}, 5);
  EXPECT_TRUE(help.ran) << help.why_not;
  const PoolFlag* t = pool(help.pool, "--threads");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->option.equals);
  EXPECT_EQ(t->topic, "threads");
}

}  // namespace
}  // namespace tune::tuner
