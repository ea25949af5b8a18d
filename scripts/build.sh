#!/usr/bin/env bash
# Configures and builds dsv4 into build/ (Release): produces build/dsv4 and the test binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
