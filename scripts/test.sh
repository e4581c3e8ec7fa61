#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs the whole test suite: unit tests,
# C library tests, and end-to-end tests that start liveroom-server and liveroom on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="/opt/swift/usr/bin:$PATH"; fi
bash scripts/install-deps.sh
build_log="$(mktemp)"
trap 'rm -f "$build_log"' EXIT
swift build --build-tests 2>&1 | tee "$build_log"
# The project's own code builds without warnings: a new one fails the run (the packages' warnings
# are theirs). A fresh checkout compiles every file, so CI sees every warning.
if grep -E '^/[^ ]*/(Sources|Server|Client|Benchmarks|Tests)/[^ ]*\.swift:[0-9]+:[0-9]+: warning:' "$build_log" | grep -v '/\.build/'; then
    echo "scripts/test.sh: the build warned about the project's own code (above): fix each warning" >&2
    exit 1
fi
LIVEROOM_BIN_DIR="$(swift build --show-bin-path)"
export LIVEROOM_BIN_DIR
# Every tool the tests run is installed now: a test that finds one missing fails rather than skips.
export LIVEROOM_REQUIRE_TOOLS=1
swift test --skip-build --no-parallel
