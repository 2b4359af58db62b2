#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Runs the end-to-end tests (real BPF against fixture processes); needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's interpreter: the suite needs nothing beyond the standard library
exec timeout 2400 /usr/bin/python3 tests/e2e/run.py "$@"
