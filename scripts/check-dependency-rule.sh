#!/usr/bin/env bash
# The dependency rules (ARCHITECTURE.md), checked on every #include, because every module exports
# the repository root as its include path and a forbidden include would otherwise compile:
#
#   1. between the module folders: tuner/ may include search/ and probes/; search/, probes/ and
#      trainer/ include no other module;
#   2. between the rooms inside tuner/ (one subfolder per idea), in one order, each room including
#      only itself and rooms below it:
#        base < storage < study < {judge, launch} < measure < run < {probing, report, export, init} < cli
#      (the rooms of one level do not include each other; measure/ turns output into values and
#      includes only base/, study/ and launch/; report/ and export/ judge a stored study and do not
#      include measure/ or run/, init/ does not include run/); no source sits in tuner/ itself;
#   3. each third-party library's headers in its rooms: SQLite and libpq in storage/, yaml-cpp in
#      study/, RE2 in study/ (checking a study's patterns) and measure/ (reading output with them),
#      Boost.Process in launch/, CLI11 in cli/.
#
# Run by the build (before any module library compiles) and by ctest (architecture.dependency_rule).
#
#   scripts/check-dependency-rule.sh [ROOT]    ROOT: the repository (default: this script's)
#
# Prints one line per forbidden include, file:line first, and exits 1 when there is any.
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}

# Which module folders each module may include (its own is always allowed).
declare -A may_include=(
  [search]=""
  [probes]=""
  [trainer]=""
  [tuner]="search probes"
)

# The rooms of tuner/, bottom first, and which rooms each may include (its own is always allowed).
tuner_rooms=(base storage study judge launch measure run probing report export init cli)
declare -A room_may_include=(
  [base]=""
  [storage]="base"
  [study]="base storage"
  [judge]="base storage study"
  [launch]="base storage study"
  [measure]="base study launch"
  [run]="base storage study judge launch measure"
  [probing]="base storage study judge launch measure run"
  [report]="base storage study judge launch"
  [export]="base storage study judge launch"
  [init]="base storage study judge launch measure"
  [cli]="base storage study judge launch measure run probing report export init"
)

# Third-party headers (an #include path prefix) and the rooms each belongs to.
declare -A library_room=(
  ["sqlite3.h"]=storage
  ["libpq-fe.h"]=storage
  ["yaml-cpp/"]=study
  ["re2/"]="study measure"
  ["boost/process"]=launch
  ["boost/math/"]=base
  ["CLI/"]=cli
)

order="base < storage < study < {judge, launch} < measure < run < {probing, report, export, init} < cli"
sources=(--include='*.h' --include='*.hpp' --include='*.cpp' --include='*.cc' --include='*.cu'
         --include='*.cuh')
violations=0
report() {
  echo "$1"
  violations=$((violations + 1))
}
trimmed() { echo "${1#"${1%%[![:space:]]*}"}"; }

# 1. Modules.
include_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](\.\./)*(search|probes|trainer|tuner)/'
for module in search probes trainer tuner; do
  [[ -d "$root/$module" ]] || continue
  while IFS= read -r hit; do
    file=${hit%%:*}
    rest=${hit#*:}
    line=${rest%%:*}
    text=${rest#*:}
    [[ $text =~ $include_re ]]
    target=${BASH_REMATCH[2]}
    [[ $target == "$module" || " ${may_include[$module]} " == *" $target "* ]] && continue
    if [[ -n ${may_include[$module]} ]]; then
      allowed="besides itself, $module/ may include only ${may_include[$module]// //, }/"
    else
      allowed="$module/ includes no other module"
    fi
    report "${file#"$root"/}:$line: $module/ may not include $target/ ($(trimmed "$text")):" \
      "$allowed (ARCHITECTURE.md)"
  done < <(grep -rnE "${sources[@]}" "$include_re" "$root/$module" || true)
done

# 2. Rooms inside tuner/.
if [[ -d "$root/tuner" ]]; then
  while IFS= read -r file; do
    report "${file#"$root"/}:1: a source directly in tuner/: each belongs to one room" \
      "(${tuner_rooms[*]}; ARCHITECTURE.md, \"Rooms inside tuner/\")"
  done < <(find "$root/tuner" -maxdepth 1 -type f \( -name '*.h' -o -name '*.cpp' \) | sort)
  room_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](\.\./)*tuner/([A-Za-z0-9_]+)/'
  flat_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](\.\./)*tuner/[A-Za-z0-9_]+\.(h|hpp)[">]'
  # An include from outside tuner/ (tests, bench) may name any room, but not a flat tuner/ file.
  for room in "${tuner_rooms[@]}"; do
    [[ -d "$root/tuner/$room" ]] || continue
    while IFS= read -r hit; do
      file=${hit%%:*}
      rest=${hit#*:}
      line=${rest%%:*}
      text=${rest#*:}
      [[ $text =~ $room_re ]]
      target=${BASH_REMATCH[2]}
      [[ $target == "$room" || " ${room_may_include[$room]} " == *" $target "* ]] && continue
      if [[ -n ${room_may_include[$room]} ]]; then
        allowed="tuner/$room/ may include only ${room_may_include[$room]// //, }/ besides itself"
      else
        allowed="tuner/$room/ includes no other room"
      fi
      report "${file#"$root"/}:$line: tuner/$room/ may not include tuner/$target/" \
        "($(trimmed "$text")): $allowed (order: $order; ARCHITECTURE.md)"
    done < <(grep -rnE "${sources[@]}" "$room_re" "$root/tuner/$room" || true)
  done
  while IFS= read -r hit; do
    file=${hit%%:*}
    rest=${hit#*:}
    report "${file#"$root"/}:${rest%%:*}: includes a tuner/ header outside any room" \
      "($(trimmed "${rest#*:}")): name it by its room, tuner/ROOM/NAME.h"
  done < <(grep -rnE "${sources[@]}" "$flat_re" "$root/tuner" || true)

  # 3. Third-party libraries in their rooms.
  for header in "${!library_room[@]}"; do
    homes=${library_room[$header]}
    while IFS= read -r hit; do
      file=${hit%%:*}
      rest=${hit#*:}
      rel=${file#"$root"/tuner/}
      here=${rel%%/*}
      [[ " $homes " == *" $here "* ]] && continue
      where=tuner/${homes// //, tuner/}/
      report "${file#"$root"/}:${rest%%:*}: <$header...> belongs to $where only" \
        "($(trimmed "${rest#*:}")): call that room's interface instead (ARCHITECTURE.md)"
    done < <(grep -rnE "${sources[@]}" \
               "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]${header//./\\.}" \
               "$root/tuner" || true)
  done
fi

if ((violations > 0)); then
  echo "dependency rule: $violations forbidden include(s)" >&2
  exit 1
fi
