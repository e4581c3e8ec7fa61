#!/usr/bin/env bash
# Builds the fuzz targets with libFuzzer and AddressSanitizer and runs each for a number of
# executions (default 1,000,000), or stops it after a time limit. Crashes are written to
# FailCases/; turn each into a unit test. Prints each target's execution count at the end.
#
#   bash run.sh                 # 1,000,000 executions of every target
#   bash run.sh 200000 FuzzWire # 200,000 executions of one target
#   MAX_SECONDS=60 bash run.sh  # each target for at most 60 s
set -euo pipefail
cd "$(dirname "$0")"
# A crash should end the target at once, with libFuzzer writing its input, not wait for the Swift backtracer.
export SWIFT_BACKTRACE=enable=no
runs="${1:-1000000}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(FuzzSignalingRequest FuzzServerEvent FuzzUserSig FuzzPrivateMapKey FuzzClientCommand FuzzWire FuzzPublishTaskConfig FuzzAdminRequest FuzzMediaPort FuzzICETCPAndRelay)
fi
swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
mkdir -p FailCases
summary=()
status=0
for target in "${targets[@]}"; do
  echo "== $target"
  # A target with seeds in Seeds/<target> starts from them; what it finds goes to a scratch corpus.
  corpus=()
  if [ -d "Seeds/$target" ]; then corpus=("$(mktemp -d)" "Seeds/$target"); fi
  log="$(mktemp)"
  started=$(date +%s)
  if ".build/release/$target" -runs="$runs" -max_total_time="${MAX_SECONDS:-0}" -artifact_prefix=FailCases/ \
      -print_final_stats=1 "${corpus[@]}" 2>&1 | tee "$log" | grep -E "^(#[0-9]+[[:space:]]+(INITED|DONE)|==[0-9]+==ERROR|SUMMARY)" ; then :; fi
  result="ok"
  if grep -q -E "==[0-9]+==ERROR|deadly signal|Fatal error" "$log"; then result="CRASH (see FailCases/)"; status=1; fi
  executions=$(grep -o "stat::number_of_executed_units: [0-9]*" "$log" | awk '{print $2}' | tail -1)
  summary+=("$(printf '%-24s %12s executions %6s s  %s' "$target" "${executions:-?}" "$(( $(date +%s) - started ))" "$result")")
  rm -f "$log"
done
echo
echo "== Executions per target"
printf '%s\n' "${summary[@]}"
exit $status
