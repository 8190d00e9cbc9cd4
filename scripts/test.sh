#!/usr/bin/env bash
# Set-up as scripts/bootstrap.sh, then the whole test suite: ctest (GPU tests
# skip cleanly without a device), then the Python client's pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
BUILD_DIR=${BUILD_DIR:-build}
ctest_status=0
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" --timeout 600 || ctest_status=$?
if [ "$ctest_status" -ne 0 ]; then
  # One ctest can hold many GoogleTest cases (exploits.cpu.shard1of3: a third
  # of 81, in one engine), and CI shows only the head and tail of a long log:
  # print the failed cases' assertions and names last, where the tail shows
  # them.
  log="$BUILD_DIR/Testing/Temporary/LastTest.log"
  if [ -f "$log" ]; then
    echo "== assertions that failed (from $log) =="
    grep -a -A6 -E '(: Failure$|^unknown file: error)' "$log" | head -c 5000 || true
    echo
    echo "== failed GoogleTest cases =="
    grep -a -E '^\[  FAILED  \] [A-Za-z0-9_/]+\.[A-Za-z0-9_/]+' "$log" | grep -a -v 'listed below' |
      sed -E 's/ \([0-9]+ ms\)$//' | sort -u || true
  fi
  exit "$ctest_status"
fi
if [ -d clients/python/tests ]; then
  python3 -m pip install -q --disable-pip-version-check ./clients/python
  KERNELEVAL_BUILD_DIR="$PWD/$BUILD_DIR" python3 -m pytest -q clients/python/tests
fi
