#!/usr/bin/env bash
# The whole test set-up and the full suite, in one command (the README's second command; .ci/run).
# Installs the Debian packages the tests drive for real, builds a venv from Debian's python3
# (as fleets install it), installs diskprobe with its test extras, then lint, types and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every tool a test drives: under CI (tests/ci.py) a test that finds one missing fails.
APT_PACKAGES=(influxdb sysstat fio smartmontools util-linux e2fsprogs libfuse3-3 fuse3
              prometheus-node-exporter prometheus collectd-core victoria-metrics sudo
              libcap2-bin time dmsetup systemd python3 python3-venv python3-pip pipx)
missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "tests/run.sh: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

PYTHON="${PYTHON:-/usr/bin/python3}"
VENV="${DISKPROBE_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e '.[test]'
# The training-job callbacks run real fits: Keras 3 on the CPU PyTorch backend, and Lightning.
# torch is pinned so pip takes this machine's local CPU wheel and Lightning cannot swap it.
echo "torch==2.13.0" > "$VENV/torch-constraint.txt"
# skip_summaries writes real TensorBoard event files: Keras 3's TensorBoard callback needs
# TensorFlow's summary writer on every backend (the CPU build is enough), Lightning's
# TensorBoardLogger the tensorboard package.
"$VENV/bin/python" -m pip install -q -c "$VENV/torch-constraint.txt" torch==2.13.0 keras lightning \
    tensorflow-cpu==2.21.0 tensorboard==2.21.0
export KERAS_BACKEND=torch

"$VENV/bin/ruff" check plugin tests dashboards
"$VENV/bin/mypy"
MYPYPATH=dashboards "$VENV/bin/mypy" --strict dashboards/dashgen dashboards/generate.py
"$VENV/bin/pytest" "$@"

# Fleets still run Python 3.9: where an interpreter for it is at hand (pyenv here), the unit
# tests run under it as well. Set PYTHON39= (empty) to skip.
find_python39() {
  local candidate
  for candidate in python3.9 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.9*/bin/python3.9; do
    if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 9)' 2>/dev/null; then
      command -v "$candidate"
      return
    fi
  done
}
PYTHON39="${PYTHON39-$(find_python39)}"
if [ -n "$PYTHON39" ] && [ "$#" -eq 0 ]; then
  VENV39="${VENV}-py39"
  [ -x "$VENV39/bin/python" ] || "$PYTHON39" -m venv "$VENV39"
  "$VENV39/bin/python" -m pip install -q -e '.[test]'
  "$VENV39/bin/pytest" -q -m "not root and not slow" -p no:cacheprovider
else
  echo "tests/run.sh: no python3.9 found; Python 3.9 compatibility not checked"
fi
