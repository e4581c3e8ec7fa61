#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs liveroom-server on its embedded
# default (loopback, SQLite in ./liveroom-data, development SDKAppID and secret printed).
# Extra arguments go to liveroom-server, e.g. --port 9000.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then export PATH="/opt/swift/usr/bin:$PATH"; fi
bash scripts/install-deps.sh
swift build -c release --product liveroom-server
swift build -c release --product liveroom
# A trap or fault prints its backtrace to the log (standard error), never waiting at a prompt.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=yes,interactive=no,color=no}"
exec "$(swift build -c release --show-bin-path)/liveroom-server" "$@"
