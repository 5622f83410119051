#!/usr/bin/env bash
# The whole test set-up and the full suite, in one command (the README's second command; .ci/run).
# Installs the Debian packages the tests drive for real, builds a venv from Debian's python3
# (as fleets install it), installs diskprobe with its test extras, then lint, types and pytest
# (in parallel workers, pytest-xdist), then the unit tests under Python 3.9. Every check runs
# even when an earlier one failed; the last lines say which failed, and the exit status is 1.
#
# Arguments go to the Python 3.11 pytest run, which then runs alone (no lint, no 3.9 part):
# ./tests/run.sh tests/test_docs.py. DISKPROBE_TEST_WORKERS sets the workers (0: no xdist).
set -euo pipefail
cd "$(dirname "$0")/.."

# Every tool a test drives: under CI (tests/ci.py) a test that finds one missing fails.
APT_PACKAGES=(influxdb sysstat fio smartmontools util-linux e2fsprogs libfuse3-3 fuse3
              prometheus-node-exporter prometheus collectd-core victoria-metrics sudo
              libcap2-bin time dmsetup systemd python3 python3-venv python3-pip pipx git bpftrace)
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

# [latency]'s kernel side: bpftrace reads the tracepoints' formats in tracefs, which Debian
# does not mount (diskprobe mounts it too when it runs as root; the tests' agents do).
if [ "$(id -u)" -eq 0 ] && ! [ -e /sys/kernel/tracing/available_events ]; then
  mount -t tracefs nodev /sys/kernel/tracing || echo "tests/run.sh: tracefs not mounted"
fi

# Bytecode caches on, whatever the environment says (this machine's sets PYTHONDONTWRITEBYTECODE):
# a run of the suite starts diskprobe many hundred times, and each start compiled every module
# it imports from source again (0.1 s of CPU a start), as every pytest worker rewrote every test
# module. An installed wheel has its caches; so do the tests now (docs/testing.md).
unset PYTHONDONTWRITEBYTECODE

PYTHON="${PYTHON:-/usr/bin/python3}"
VENV="${DISKPROBE_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
pip_quiet() {  # pip, without its notices about this machine's unused local package folders
  "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
}
pip_quiet "$VENV/bin/python" -m pip install -q --upgrade pip
pip_quiet "$VENV/bin/python" -m pip install -q -e '.[test]'
# The training-job callbacks run real fits: Keras 3 on the CPU PyTorch backend, and Lightning.
# torch is pinned so pip takes this machine's local CPU wheel and Lightning cannot swap it.
echo "torch==2.13.0" > "$VENV/torch-constraint.txt"
# skip_summaries writes real TensorBoard event files: Keras 3's TensorBoard callback needs
# TensorFlow's summary writer on every backend (the CPU build is enough), Lightning's
# TensorBoardLogger the tensorboard package. What each costs: docs/testing.md.
# jax[cpu]: only tests/test_diagnose_frameworks.py's jitted step (XLA runs it in its own threads).
pip_quiet "$VENV/bin/python" -m pip install -q -c "$VENV/torch-constraint.txt" torch==2.13.0 \
    keras lightning tensorflow-cpu==2.21.0 tensorboard==2.21.0 'jax[cpu]'
export KERAS_BACKEND=torch
# The Flux downsampling task is checked by the Flux language server's own parser and type
# checker, an npm package (tests/test_downsampling_flux.py). Node.js and npm come with this
# kind of machine; one without them gets Debian's.
if ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    nodejs npm >/dev/null
fi
FLUX_LSP="@influxdata/flux-lsp-node@0.8.40"
[ -d "$VENV/node_modules/@influxdata/flux-lsp-node" ] \
  || npm install --silent --no-save --no-package-lock --no-audit --no-fund --prefix "$VENV" \
       "$FLUX_LSP" >/dev/null
export DISKPROBE_FLUX_LSP="$(cd "$VENV" && pwd)/node_modules/@influxdata/flux-lsp-node/flux-lsp-node.js"

# Two cores here: most tests wait (on intervals, servers, devices) rather than compute, so
# more workers than cores; `serial` tests still run alone (tests/lanes.py). (Five were no
# faster than four: 831 s against 826 s.)
WORKERS="${DISKPROBE_TEST_WORKERS:-$(( $(nproc) * 2 > 4 ? $(nproc) * 2 : 4 ))}"
XDIST=()
[ "$WORKERS" -gt 0 ] && XDIST=(-n "$WORKERS" --dist loadgroup)

if [ "$#" -gt 0 ]; then
  exec "$VENV/bin/pytest" "${XDIST[@]}" "$@"
fi

failed=()
step() {  # step NAME COMMAND...: run it, time it, remember a failure and go on
  local name="$1" started=$SECONDS
  shift
  echo "tests/run.sh: $name"
  if "$@"; then
    echo "tests/run.sh: $name passed in $(( SECONDS - started )) s"
  else
    echo "tests/run.sh: $name FAILED (exit $?) after $(( SECONDS - started )) s"
    failed+=("$name")
  fi
}

step "ruff" "$VENV/bin/ruff" check plugin tests dashboards
step "mypy" "$VENV/bin/mypy"
step "mypy (dashboards)" env MYPYPATH=dashboards "$VENV/bin/mypy" --strict dashboards/dashgen \
    dashboards/generate.py
step "pytest (Python 3.11, the whole suite)" "$VENV/bin/pytest" "${XDIST[@]}" --durations=25

# Fleets still run Python 3.9: where an interpreter for it is at hand (pyenv here), the unit
# tests run under it as well. Set PYTHON39= (empty) to skip. Left to the 3.11 run: the tests
# of what the plugin ships as files or of the tools around it (dashboards and their queries,
# the Prometheus rules under promtool and vmalert, downsampling tasks, the fleet benchmarks)
# and of the suite itself (lanes, isolation, schema coverage): their Python is the tests'
# own and the tools', not the 3.9 fleets run, and they cost a third of this run. And the
# parser fuzzers: the parsers' code runs under 3.9 in their own tests; the fuzzers search
# inputs, which the 3.11 run does with 10,000 examples each.
PY39_LEFT_OUT=(tests/test_dashboards*.py tests/test_prometheus_rules.py tests/test_downsampling_*.py
               tests/test_bench_fleet*.py tests/test_fleet_drain.py tests/test_lanes.py
               tests/test_suite_isolation.py tests/test_schema_coverage.py
               tests/test_fuzz_parsers.py)
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
if [ -n "$PYTHON39" ]; then
  VENV39="${VENV}-py39"
  [ -x "$VENV39/bin/python" ] || "$PYTHON39" -m venv "$VENV39"
  pip_quiet "$VENV39/bin/python" -m pip install -q -e '.[test]'
  step "pytest (Python 3.9, unit tests: not root, not slow)" "$VENV39/bin/pytest" \
      "${XDIST[@]}" -q -m "not root and not slow" -p no:cacheprovider \
      "${PY39_LEFT_OUT[@]/#/--ignore=}"
else
  echo "tests/run.sh: no python3.9 found; Python 3.9 compatibility not checked"
  case "${CI:-}" in ""|0|false|False|FALSE|no|No|NO) ;; *) failed+=("Python 3.9 (none found)");; esac
fi

if [ "${#failed[@]}" -gt 0 ]; then
  echo "tests/run.sh: FAILED: $(IFS=,; echo "${failed[*]}")"
  exit 1
fi
echo "tests/run.sh: every check passed"
