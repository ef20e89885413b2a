// tune-knob-defaults OUTPUT: writes the bundled trainer's flag defaults, taken from the knob
// catalog (probes/knobs.yaml, embedded), as a C++ header of constants. A build step: the trainer
// may not link probes/ or yaml-cpp, so it includes this header instead, and its defaults follow
// the catalog at every build. The file is rewritten only when its text changes, so an edit of an
// unrelated knob does not rebuild the trainer.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "probes/knob_catalog.h"

namespace {

// "--iterator-workers" -> "iterator_workers"
std::string identifier(const std::string& flag) {
  std::string out = flag.substr(flag.find_first_not_of('-'));
  for (char& c : out)
    if (c == '-') c = '_';
  return out;
}

// One knob's constants; false when its type has no C++ spelling here.
bool write_constant(std::ostream& out, const tune::probes::Knob& k) {
  const std::string id = "k_" + identifier(k.variable);
  out << "// " << k.variable << ": " << k.default_text << "\n";
  if (k.type == "int") {
    out << "inline constexpr int " << id << " = " << k.default_value << ";\n";
  } else if (k.type == "bytes") {
    out << "inline constexpr long long " << id << " = " << k.default_value << ";\n";
  } else if (k.type == "float") {
    out << "inline constexpr double " << id << " = " << k.default_value << ";\n";
  } else if (k.type == "bool") {
    out << "inline constexpr bool " << id << " = " << k.default_value << ";\n";
  } else if (k.type == "choice") {
    // The index lets an enum declared in the catalog's choice order take the default as a
    // constant; the trainer's tests check the orders agree.
    std::size_t index = 0;
    while (index < k.choices.size() && k.choices[index].value != k.default_value) ++index;
    out << "inline constexpr std::string_view " << id << " = \"" << k.default_value << "\";\n"
        << "inline constexpr int " << id << "_index = " << index << ";\n";
  } else {
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tune-knob-defaults OUTPUT_HEADER\n";
    return 2;
  }
  std::ostringstream out;
  out << "// Generated from probes/knobs.yaml by tune-knob-defaults "
         "(probes/knob_defaults_main.cpp):\n"
         "// the bundled trainer's flag defaults. Edit the catalog, not this file.\n"
         "#pragma once\n\n#include <string_view>\n\nnamespace tune::trainer::knob_defaults {\n\n";
  for (const auto* k : tune::probes::knob_catalog().for_program("tune-trainer")) {
    if (k->set_by != "flag" || k->variable.empty()) continue;
    if (!write_constant(out, *k)) {
      std::cerr << "tune-knob-defaults: knob " << k->name << ": type " << k->type
                << " has no C++ constant\n";
      return 1;
    }
  }
  out << "\n}  // namespace tune::trainer::knob_defaults\n";

  const std::string path = argv[1];
  {
    std::ifstream old(path);
    std::stringstream existing;
    existing << old.rdbuf();
    if (old && existing.str() == out.str()) return 0;
  }
  std::ofstream file(path, std::ios::trunc);
  file << out.str();
  if (!file) {
    std::cerr << "tune-knob-defaults: cannot write " << path << "\n";
    return 1;
  }
  return 0;
}
