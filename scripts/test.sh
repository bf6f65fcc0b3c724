#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, builds, and runs every test with ctest; then builds the unit
# tests with AddressSanitizer and UBSan and runs them too.
# The redis tests (-L redis) start private redis-server processes on free loopback ports.
# Usage: scripts/test.sh [ctest args...]   e.g. scripts/test.sh -L unit
#   FLOODGATE_SKIP_SANITIZE=1 skips the sanitizer pass.
set -euo pipefail
FLOODGATE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$FLOODGATE_ROOT/scripts/lib/deps.sh"

install_missing_packages
check_redis_binaries
ensure_bpffs

if [[ -z ${FLOODGATE_SKIP_SANITIZE:-} ]]; then
  echo "==> unit tests under AddressSanitizer and UBSan"
  ASAN_DIR=${FLOODGATE_ASAN_BUILD_DIR:-$FLOODGATE_ROOT/build-asan}
  FLOODGATE_CMAKE_ARGS="-DFLOODGATE_SANITIZE=ON" build_floodgate "$ASAN_DIR" Debug floodgate_unit_tests
  (cd "$ASAN_DIR" && ctest -L unit --output-on-failure)
fi

echo "==> all tests"
BUILD_DIR=${FLOODGATE_BUILD_DIR:-$FLOODGATE_ROOT/build}
build_floodgate "$BUILD_DIR" RelWithDebInfo
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 "$@"
