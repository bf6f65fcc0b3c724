#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, builds, and runs every test with ctest.
# Usage: scripts/test.sh [ctest args...]   e.g. scripts/test.sh -L unit
set -euo pipefail
FLOODGATE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$FLOODGATE_ROOT/scripts/lib/deps.sh"

install_missing_packages
BUILD_DIR=${FLOODGATE_BUILD_DIR:-$FLOODGATE_ROOT/build}
build_floodgate "$BUILD_DIR" RelWithDebInfo
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 "$@"
