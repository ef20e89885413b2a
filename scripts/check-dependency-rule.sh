#!/usr/bin/env bash
# The dependency rule between the module folders (ARCHITECTURE.md, "Modules and who may depend
# on whom"), checked on every #include: every module exports the repository root as its include
# path, so a forbidden include would otherwise compile. Run by the build (before any module
# library compiles) and by ctest (architecture.dependency_rule).
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

include_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](\.\./)*(search|probes|trainer|tuner)/'
violations=0
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
    echo "${file#"$root"/}:$line: $module/ may not include $target/" \
      "(${text#"${text%%[![:space:]]*}"}): $allowed (ARCHITECTURE.md)"
    violations=$((violations + 1))
  done < <(grep -rnE --include='*.h' --include='*.hpp' --include='*.cpp' --include='*.cc' \
             --include='*.cu' --include='*.cuh' "$include_re" "$root/$module" || true)
done
if ((violations > 0)); then
  echo "dependency rule: $violations forbidden include(s)" >&2
  exit 1
fi
