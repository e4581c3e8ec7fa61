#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs the whole test suite: unit tests,
# C library tests, and end-to-end tests that start liveroom-server and liveroom on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="/opt/swift/usr/bin:$PATH"; fi
bash scripts/install-deps.sh
swift build --build-tests
LIVEROOM_BIN_DIR="$(swift build --show-bin-path)"
export LIVEROOM_BIN_DIR
# Every tool the tests run is installed now: a test that finds one missing fails rather than skips.
export LIVEROOM_REQUIRE_TOOLS=1
swift test --skip-build --no-parallel
