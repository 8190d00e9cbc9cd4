#!/usr/bin/env bash
# Set-up as scripts/bootstrap.sh, then the whole test suite: ctest (GPU tests
# skip cleanly without a device), then the Python client's pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
BUILD_DIR=${BUILD_DIR:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" --timeout 600
if [ -d clients/python/tests ]; then
  python3 -m pip install -q --disable-pip-version-check ./clients/python
  KERNELEVAL_BUILD_DIR="$PWD/$BUILD_DIR" python3 -m pytest -q clients/python/tests
fi
