#!/usr/bin/env bash
# Installs what soac needs to build, from Debian/Ubuntu packages, and only what is missing
# (quick when everything is there). The CUDA toolkit (nvcc with CUB/Thrust) is not a Debian
# package here: it must already be installed, and this script says so when it is not.
#   scripts/setup-deps.sh --fuzz    also clang and its sanitizer/libFuzzer runtimes (scripts/fuzz.sh)
set -euo pipefail

packages=(cmake g++ make libcxxopts-dev nlohmann-json3-dev libstb-dev libgtest-dev python3-matplotlib libopenmpi-dev openmpi-bin)
if [ "${1:-}" = --fuzz ]; then packages+=(clang libclang-rt-dev); fi

if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "setup: nvcc is at /usr/local/cuda/bin but not on PATH; the build scripts add it." >&2
  else
    echo "setup: error: nvcc (the CUDA toolkit, 12.8 or newer, with CUB and Thrust) is not installed." >&2
    echo "setup: install the CUDA toolkit from NVIDIA and put its bin/ on PATH, then run this again." >&2
    exit 1
  fi
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "setup: error: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done" >&2
