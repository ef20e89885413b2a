// The trainer's thread and communication flag defaults are the knob catalog's: parse_options
// with no such flag gives exactly the catalog's `default` of every tune-trainer flag knob, and
// the catalog's choices name the trainer's enum values in the same order (the generated header
// hands the trainer a choice's default as an index). The test links the catalog; the trainer
// does not.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "probes/knob_catalog.h"
#include "trainer/options.h"

namespace tune::trainer {
namespace {

Options parsed(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--out", "o", "--synthetic", "10"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto o = parse_options(args);
  EXPECT_TRUE(o) << o.error();
  return o.value_or(Options{});
}

// Each tune-trainer flag knob's field of Options, as a number (an enum as its index).
const std::map<std::string, std::function<double(const Options&)>>& fields() {
  static const std::map<std::string, std::function<double(const Options&)>> k_fields = {
      {"--iterator-workers", [](const Options& o) { return o.iterator_workers; }},
      {"--prefetch", [](const Options& o) { return o.prefetch; }},
      {"--omp-threads", [](const Options& o) { return o.omp_threads; }},
      {"--blas-threads", [](const Options& o) { return o.blas_threads; }},
      {"--opencv-threads", [](const Options& o) { return o.opencv_threads; }},
      {"--double-buffering", [](const Options& o) { return o.double_buffering ? 1 : 0; }},
      {"--allreduce", [](const Options& o) { return static_cast<int>(o.allreduce); }},
      {"--bucket-mb", [](const Options& o) { return o.bucket_mb; }},
      {"--grad-dtype", [](const Options& o) { return static_cast<int>(o.grad_dtype); }},
      {"--warm-start", [](const Options& o) { return static_cast<double>(o.warm_start); }},
      {"--sync", [](const Options& o) { return static_cast<int>(o.sync); }},
      {"--block-steps", [](const Options& o) { return o.block_steps; }},
  };
  return k_fields;
}

std::vector<const probes::Knob*> trainer_flag_knobs() {
  std::vector<const probes::Knob*> out;
  for (const probes::Knob* k : probes::knob_catalog().for_program("tune-trainer"))
    if (k->set_by == "flag" && !k->variable.empty()) out.push_back(k);
  return out;
}

// The catalog's default as the number fields() reads.
double catalog_default(const probes::Knob& k) {
  if (k.type == "bool") return k.default_value == "true" ? 1 : 0;
  if (k.type == "choice") {
    for (std::size_t i = 0; i < k.choices.size(); ++i)
      if (k.choices[i].value == k.default_value) return static_cast<double>(i);
    ADD_FAILURE() << k.name << ": default not among the choices";
  }
  return std::stod(k.default_value);
}

TEST(TrainerKnobDefaults, ParsedDefaultsEqualTheCatalog) {
  const Options o = parsed();
  const auto knobs = trainer_flag_knobs();
  ASSERT_EQ(knobs.size(), fields().size()) << "a trainer flag knob without a field here, or back";
  for (const probes::Knob* k : knobs) {
    SCOPED_TRACE(k->variable);
    ASSERT_TRUE(fields().contains(k->variable));
    EXPECT_DOUBLE_EQ(fields().at(k->variable)(o), catalog_default(*k));
    EXPECT_DOUBLE_EQ(fields().at(k->variable)(Options{}), catalog_default(*k));
  }
}

TEST(TrainerKnobDefaults, CatalogChoicesAreInTheEnumsOrder) {
  for (const probes::Knob* k : trainer_flag_knobs()) {
    if (k->type != "choice") continue;
    for (std::size_t i = 0; i < k->choices.size(); ++i) {
      const std::string& name = k->choices[i].value;
      SCOPED_TRACE(k->variable + " " + name);
      // nccl is only accepted with the GPU path; parsing needs no GPU.
      const Options o = parsed({k->variable, name, "--device", "cuda"});
      EXPECT_EQ(fields().at(k->variable)(o), static_cast<double>(i));
    }
  }
}

}  // namespace
}  // namespace tune::trainer
