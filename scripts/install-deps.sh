#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of tune from Debian packages.
# Idempotent: when everything is already installed it only checks (well under a second).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libopenmpi-dev openmpi-bin
  libboost-dev libboost-filesystem-dev
  nlohmann-json3-dev libsqlite3-dev sqlite3
  libpq-dev postgresql python3-psycopg2
  libhwloc-dev hwloc
  libyaml-cpp-dev libcli11-dev libfmt-dev libre2-dev
  libopenblas-dev libopencv-imgproc-dev libopencv-core-dev
  libgtest-dev libgmock-dev
  dataset-fashion-mnist
  python3-optuna python3-torch python3-numpy
  libjs-chart.js
  chromium slurm-wlm munge
)
# libjs-chart.js: Chart.js, inlined by `tune report --format html`. chromium renders that report
# in a test; slurm-wlm + munge run the exported Slurm script on a local single-node cluster.
# libpq-dev: the PostgreSQL storage; postgresql: the throwaway server its tests start;
# python3-psycopg2: python3-optuna reading the same PostgreSQL study in those tests.
# Optional extras for tests that are skipped with a message when absent.
optional=(clang-format)

missing=()
for p in "${packages[@]}" ${TUNE_WITH_OPTIONAL:+"${optional[@]}"}; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=900 update -qq
"${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}"
