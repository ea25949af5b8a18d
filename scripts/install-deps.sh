#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test dsv4 (needs root or sudo).
# Every dependency is a Debian package; Node.js/npm (for the tokenizer test data and the
# reference `tokenizers` binding) come from Debian too when the machine has none.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
pkgs=(cmake ninja-build g++ clang libclang-rt-14-dev pkg-config
      nlohmann-json3-dev libfmt-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
      libicu-dev libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev python3 python3-numpy ca-certificates)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
