// Where tune's own files are (its programs, plugin libraries, ready studies, chart script), found
// from the running executable, so one install tree works wherever it is mounted and the build tree
// runs the same way. Plain functions over /proc/self/exe and the file system; thread-safe.
// Design: docs/design-notes.md#tunerbaseinstall_layouth
#pragma once

#include <filesystem>
#include <string>

namespace tune::tuner {

// The running executable (/proc/self/exe), and its folder; empty if it cannot be read.
std::filesystem::path executable_path();
std::filesystem::path executable_dir();

// The program `name` next to the running executable (tune-keeper, tune-trainer) when it is there
// and executable; empty otherwise.
std::filesystem::path sibling_program(const std::string& name);

// A library of tune's that other programs load (libtune_threads.so, libtune_getenv.so): next to
// the running executable (the build tree) or in ../lib/tune (an install); empty when neither.
std::filesystem::path plugin_library(const std::string& name);

// PREFIX/share/tune for the executable at PREFIX/bin; empty if executable_dir() is.
std::filesystem::path data_dir();

// A study argument as given, unless it names no file and is a bare name (no '/') of a ready
// study: then data_dir()/studies/NAME.yaml (or NAME itself when it already ends in .yaml).
std::string resolve_study_file(const std::string& argument);

}  // namespace tune::tuner
