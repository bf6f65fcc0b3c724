#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs promtool for the monitoring tests, and fails (never skips) when promtool is not installed.
if ! command -v promtool >/dev/null 2>&1; then
  echo "error: promtool not found; install Debian's 'prometheus' package (scripts/lib/deps.sh)" >&2
  exit 1
fi
exec promtool "$@"
