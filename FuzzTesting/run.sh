#!/usr/bin/env bash
# Builds the fuzz targets with libFuzzer and AddressSanitizer and runs each for a while
# (default 60 s). Crashes are written to FailCases/; turn each into a unit test.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
mkdir -p FailCases
for target in FuzzSignalingRequest FuzzServerEvent FuzzUserSig FuzzClientCommand FuzzWire FuzzPublishTaskConfig; do
  echo "== $target"
  # A target with seeds in Seeds/<target> starts from them; what it finds goes to a scratch corpus.
  corpus=()
  if [ -d "Seeds/$target" ]; then corpus=("$(mktemp -d)" "Seeds/$target"); fi
  ".build/release/$target" -max_total_time="$seconds" -artifact_prefix=FailCases/ -print_final_stats=1 "${corpus[@]}"
done
