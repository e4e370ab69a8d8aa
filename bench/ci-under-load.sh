#!/usr/bin/env bash
# bench/ci-under-load.sh [RUNS]: runs `.ci/run` on a fresh clone of this checkout's HEAD, RUNS
# times in a row (default 3), while both cores are kept busy by two spinning processes that this
# script starts and stops (on exit, whatever happens). Each run gets the CI time limit it should
# meet under load (25 minutes) and its own folder, removed afterwards; the script prints each run's
# time and result, and exits non-zero if any failed. Only 127.0.0.1 is ever contacted.
set -euo pipefail
runs=${1:-3}
root="$(cd "$(dirname "$0")/.." && pwd)"
spinners=()
stop() { [ ${#spinners[@]} -eq 0 ] || kill "${spinners[@]}" 2>/dev/null || true; }
trap stop EXIT
for _ in 1 2; do
  node -e 'for (;;);' &
  spinners+=($!)
done
failed=0
for run in $(seq 1 "$runs"); do
  work="$(mktemp -d "${TMPDIR:-/tmp}/cms-ci-load.XXXXXX")"
  git clone -q "$root" "$work/p"
  began=$SECONDS
  status=0
  (cd "$work/p" && CI=true timeout 1500 bash .ci/run </dev/null >"$work/ci.log" 2>&1) || status=$?
  took=$((SECONDS - began))
  echo "run $run: exit $status in ${took} s ($(uptime | sed 's/.*load average: //'))"
  if [ "$status" -ne 0 ]; then
    failed=1
    # The whole log is kept, and its failures shown: a shard's report can be long.
    cp "$work/ci.log" "${TMPDIR:-/tmp}/cms-ci-load-run-$run.log"
    echo "log kept in ${TMPDIR:-/tmp}/cms-ci-load-run-$run.log"
    grep -n -A 25 -E '^(✖ failing tests:|Failed tests:)|FAILED:' "$work/ci.log" | head -n 120 || tail -n 40 "$work/ci.log"
  fi
  grep -E '^==> \[' "$work/ci.log" || true
  rm -rf "$work"
done
exit "$failed"
