#!/usr/bin/env bash
# The benches behind docs/performance.md, on a GPU machine without Go
# (prepare with scripts/gpu-build.sh; carry bin/ and .gpu/). Each family's
# benches run on their own GPU where the machine has several (one lane per
# GPU, CUDA_VISIBLE_DEVICES), so that they do not share a memory system.
#
#   scripts/perf-results.sh OUTDIR [LANES]
#
# LANES (default: all four) names which lanes to run: sparse-f64,
# sparse-f32, fem, integrate. Every bench uses the default search (the
# tuned best, as a user gets it) and writes its --json beside a log; each
# step has a time limit (BESPOKE_STEP_LIMIT, default 540 s) and a bench
# stopped by it still writes what it finished. OUTDIR/results.tgz holds all.
# Keep the sparse lanes' JSON gzipped under docs/results/ (megabytes plain);
# `report perf` reads .json.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: perf-results.sh OUTDIR [LANES]}
shift
lanes=${*:-sparse-f64 sparse-f32 fem integrate}
mats=$PWD/.gpu/pyfr-mats
commit=$(cat .gpu/commit 2>/dev/null || echo unknown)
limit=${BESPOKE_STEP_LIMIT:-540}
mkdir -p "$out/work"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$ngpu" -ge 1 ] || ngpu=1
step() { # step NAME SECONDS COMMAND...
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/work/$name.log" 2>&1
  echo "== $name: exit $? after $((SECONDS - t0)) s" | tee -a "$out/work/steps.log"
}
lane() { # lane NAME: the benches of one lane, in order
  case $1 in
  sparse-f64|sparse-f32)
    dt=${1#sparse-}
    step "$1" "$limit" bin/bespoke bench "$mats" --backend cuda --dtype "$dt" --commit "$commit" -q \
      --json "$out/work/$1.json" --markdown "$out/work/$1.md" ;;
  fem)
    step fem-bk5 200 bin/bespoke fem bench --kernel bk5 --order 1-15 --backend cuda --dtype f64 -q --commit "$commit" --json "$out/work/fem-bk5-f64.json"
    step fem-bk13 200 bin/bespoke fem bench --kernel bk1,bk3 --order 1-12 --backend cuda --dtype f64 -q --commit "$commit" --json "$out/work/fem-bk13-f64.json"
    step fem-bp 120 bin/bespoke fem bench --kernel bp5,bp3 --order 1-8 --backend cuda --dtype f64 --bp-json "$out/work/fem-bp-f64.json" ;;
  integrate)
    for dt in f64 f32; do
      step "integrate-$dt" 150 bin/bespoke integrate bench --element prism,tet,hex --problem laplace,mass,cdr --backend cuda --dtype "$dt" -q \
        --commit "$commit" --json "$out/work/integrate-$dt.json"
    done
    for p in 1 5; do
      step "pum-2d-l9-p$p" 60 bin/bespoke pum bench --dim 2 --level 9 --degree "$p" --backend cuda --dtype f64 --json "$out/work/pum-2d-l9-p$p-f64.json"
    done ;;
  esac
}
i=0
for l in $lanes; do
  CUDA_VISIBLE_DEVICES=$((i % ngpu)) lane "$l" &
  i=$((i + 1))
done
wait
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > "$out/work/gpu.csv" 2>&1
tar -C "$out" -czf "$out/results.tgz" work
cat "$out/work/steps.log"
