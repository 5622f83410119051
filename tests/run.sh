#!/usr/bin/env bash
# The whole test set-up and the full suite, in one command (the README's second command; .ci/run).
# Installs the Debian packages the tests drive for real, builds a venv from Debian's python3
# (as fleets install it), installs diskprobe with its test extras, then lint, types and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(influxdb sysstat fio smartmontools util-linux python3 python3-venv python3-pip)
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

"$VENV/bin/ruff" check plugin tests
"$VENV/bin/mypy"
exec "$VENV/bin/pytest" "$@"
