#!/usr/bin/env bash
# Sets up everything Knowledge Explorer needs on a Debian/Ubuntu machine with Python 3.11:
# Qt's system libraries and Xvfb (apt), a virtualenv in .venv, CPU torch, the project and its test tools.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(xvfb xauth libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-xinerama0
  libxcb-cursor0 libxcb-randr0 libxcb-shape0 libxcb-xkb1 libxkbcommon0 libxkbcommon-x11-0 libegl1 libgl1
  libfontconfig1 libdbus-1-3 fonts-dejavu-core)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "Installing system packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# what the environment was made from: the same again (README's test command after .ci/run's own setup) is a no-op
STAMP=.venv/.set-up-from
wanted=$(cat pyproject.toml .ci/setup.sh | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$wanted" ]; then
  echo "Set up: .venv is ready (already made from this pyproject.toml and setup script)."
  exit 0
fi

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch first: 2.13.0 is the CPU build (anything else would pull gigabytes of CUDA).
.venv/bin/python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null \
  || .venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e '.[dev]'
# ranx's numba kernels, compiled once into the environment (else the first evaluations compile them)
.venv/bin/python -c "from services.evaluation.metrics import warm_up; warm_up()" 2>/dev/null
echo "$wanted" > "$STAMP"
echo "Set up: .venv is ready."
