#!/usr/bin/env bash
# architecture.planted_include: the dependency rules catch what they are for. A copy of the
# module folders gets one forbidden include at a time (an upward include between tuner/ rooms,
# one between two rooms of a level, a third-party header outside its room, a source outside any
# room, one module including another); scripts/check-dependency-rule.sh must exit 1 and name the
# file and line each time, and exit 0 on the untouched copy. The build runs the same script
# before any module library compiles, so each of these also fails the build.
#
#   tests/architecture/planted_include_test.sh ROOT
set -euo pipefail
root=${1:?usage: planted_include_test.sh ROOT}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fresh_copy() {
  rm -rf "$work/repo"
  mkdir -p "$work/repo/scripts"
  cp "$root/scripts/check-dependency-rule.sh" "$work/repo/scripts/"
  for module in search probes trainer tuner; do
    (cd "$root" && find "$module" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' \) \
       -exec cp --parents -t "$work/repo" {} +)
  done
}

check() {  # check NAME EXPECTED_STATUS EXPECTED_TEXT
  local name=$1 want=$2 text=$3 out status=0
  out=$("$work/repo/scripts/check-dependency-rule.sh" "$work/repo" 2>&1) || status=$?
  if [[ $status != "$want" ]]; then
    echo "FAIL $name: exit $status, expected $want"$'\n'"$out"
    failures=$((failures + 1))
  elif [[ -n $text && $out != *"$text"* ]]; then
    echo "FAIL $name: output does not name '$text':"$'\n'"$out"
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

plant() {  # plant FILE LINE: appends LINE to FILE of a fresh copy
  fresh_copy
  mkdir -p "$(dirname "$work/repo/$1")"
  printf '%s\n' "$2" >>"$work/repo/$1"
}

fresh_copy
check "the tree as it is" 0 ""

plant tuner/storage/storage_url.cpp '#include "tuner/study/study_file.h"'
check "storage/ including study/ (upward)" 1 "tuner/storage/storage_url.cpp:"
plant tuner/base/text.h '#include "tuner/cli/cli.h"'
check "base/ including cli/ (upward)" 1 "tuner/base/ may not include tuner/cli/"
plant tuner/probing/probe_hooks.cpp '#include "tuner/report/report.h"'
check "probing/ including report/ (same level)" 1 "tuner/probing/ may not include tuner/report/"
plant tuner/judge/ranking.cpp '#include "tuner/measure/objective.h"'
check "judge/ including measure/ (upward)" 1 "tuner/judge/ may not include tuner/measure/"
plant tuner/measure/objective.cpp '#include "tuner/run/runner.h"'
check "measure/ including run/ (upward)" 1 "tuner/measure/ may not include tuner/run/"
plant tuner/measure/objective.cpp '#include "tuner/storage/storage.h"'
check "measure/ including storage/ (it measures; storing is run/'s)" 1 "tuner/measure/ may not include tuner/storage/"
plant tuner/measure/trial_record.cpp '#include "tuner/judge/ranking.h"'
check "measure/ including judge/ (it measures; judging is judge/'s)" 1 "tuner/measure/ may not include tuner/judge/"
plant tuner/judge/noise.cpp '#include "tuner/launch/launcher.h"'
check "judge/ including launch/ (same level)" 1 "tuner/judge/ may not include tuner/launch/"
plant tuner/report/report_model.cpp '#include "tuner/run/runner.h"'
check "report/ including run/ (it judges a stored study)" 1 "tuner/report/ may not include tuner/run/"
plant tuner/measure/window_follower.cpp '#include <sqlite3.h>'
check "SQLite in measure/" 1 "<sqlite3.h...> belongs to tuner/storage/ only"
plant tuner/judge/noise.cpp '#include <re2/re2.h>'
check "RE2 outside study/ and measure/" 1 "belongs to tuner/study/, tuner/measure/ only"
plant tuner/run/runner.cpp '#include <yaml-cpp/yaml.h>'
check "yaml-cpp outside study/" 1 "<yaml-cpp/...> belongs to tuner/study/ only"
plant tuner/report/reporter.cpp '#include <sqlite3.h>'
check "SQLite outside storage/" 1 "<sqlite3.h...> belongs to tuner/storage/ only"
plant tuner/init/init_command.cpp '#include <boost/process.hpp>'
check "Boost.Process outside launch/" 1 "belongs to tuner/launch/ only"
plant tuner/run/runner.cpp '#include <CLI/CLI.hpp>'
check "CLI11 outside cli/" 1 "belongs to tuner/cli/ only"
plant tuner/judge/noise.cpp '#include <boost/math/distributions/normal.hpp>'
check "Boost.Math outside base/ (base/stats.h is its one door)" 1 "belongs to tuner/base/ only"
plant tuner/stray.cpp '#include "tuner/base/text.h"'
check "a source outside any room" 1 "tuner/stray.cpp:1: a source directly in tuner/"
plant tuner/cli/cli.cpp '#include "tuner/runner.h"'
check "a flat tuner/ header" 1 "outside any room"
plant search/sampler.cpp '#include "tuner/base/text.h"'
check "search/ including tuner/ (module rule)" 1 "search/sampler.cpp:"
plant tuner/run/runner.cpp '#include "trainer/options.h"'
check "tuner/ including trainer/ (module rule)" 1 "tuner/ may not include trainer/"

if ((failures > 0)); then
  echo "$failures planted include(s) not caught as expected"
  exit 1
fi
echo "all planted includes caught"
