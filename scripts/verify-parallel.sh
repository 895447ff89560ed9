#!/usr/bin/env bash
# Run `bespoke verify` as one process per (operator, precision, variant),
# JOBS at a time, so that a backend that builds one program at a time per
# process (PoCL) can still use every core. Each process writes its own log
# in LOGDIR; the summary counts the kernels verified and the failures.
#
#   scripts/verify-parallel.sh BACKEND JOBS LOGDIR FILE.mtx...
#
# BESPOKE_DEVICE picks the device within the backend (e.g. pocl where an
# OpenCL GPU would be the default). The variants are the CPU candidates of
# `bespoke verify`; each process skips those that do not apply to its operator. For PoCL,
# POCL_WORK_GROUP_METHOD=auto in the environment builds 1.7× faster.
set -uo pipefail
cd "$(dirname "$0")/.."
be=${1:?usage: verify-parallel.sh BACKEND JOBS LOGDIR FILE...} jobs=${2:?} logs=${3:?}
shift 3
mkdir -p "$logs"
variants="cstream/x128 cstream/x128-w2 bstream/x128 bstream/x128-w2 bstream-msplit/x64-y2-c16 bstream-msplit/x32-y4-c32 cstream-ksplit/x64-y2-c16 cstream-ksplit/x32-y4-c16"
for f in "$@"; do for v in $variants; do for dt in f64 f32; do echo "$f $dt $v"; done; done; done |
  BESPOKE_BACKEND=$be BESPOKE_DEVICE=${BESPOKE_DEVICE:-} LOGS=$logs xargs -P "$jobs" -L 1 bash -c '
    log=$LOGS/$(echo "$0-$1-$2" | sed "s|^[./]*||" | tr "/" "_").log
    bin/bespoke verify "$0" --backend "$BESPOKE_BACKEND" --device "$BESPOKE_DEVICE" --dtype "$1" --variant "$2" > "$log" 2>&1
    echo "exit $?" >> "$log"'
# A process that was killed has no exit line: it counts as failed.
cat "$logs"/*.log | awk '/^verifying/ {started++} /^exit/ {ended++} /^exit [^0]/ {bad++}
  /kernels verified/ {k += $1; p += $7; f += $9}
  END {bad += started - ended
    printf "%d kernels verified, %d passed, %d failed; %d of %d processes failed\n", k, p, f, bad, started
    exit (f > 0 || bad > 0)}'
