#!/usr/bin/env bash
# One run on the GPU machine, in steps: CUDA (and NVIDIA OpenCL) tests, a
# CUDA compile check with nvcc, then the full benchmark over the PyFR
# matrices in fp64 and fp32. Prepare with scripts/gpu-build.sh and carry
# bin/ and .gpu/.
#
#   scripts/gpu-run.sh OUTDIR [STEP...]
#
# STEP: info tests conformance nvcc bench-f64 bench-f32 bench-opencl-f64
# bench-contract-f64 bench-contract-f32 sigterm verify-c verify-opencl
# tune-f64 tune-f32 full-f64 full-f32 opencl-hex opencl-opts ab timer-ab sweep fem pum pum-sweep integrate streamed
# write-mix profile. sigterm
# sends SIGTERM to a CUDA bench 20 s into it, while NVRTC compiles the p6
# operators into an empty cache, and checks that it wrote its JSON (marked
# interrupted) and exited within 5 s. The verify steps run `bespoke verify` over every
# PyFR matrix on the host CPU (C via gcc, OpenCL via PoCL): verification,
# not timing, so they may run beside the tests and conformance steps (run
# a second gpu-run.sh in parallel with its own OUTDIR), never beside a bench.
#
# Each step has its own time limit (BESPOKE_STEP_LIMIT seconds for the
# benches, default 1200; on the H100 at 95935ab the fp64 bench of all 120
# matrices took 277 s, fp32 230 s and the whole run about 14 minutes; a bench
# stopped by its limit writes the operators it finished) and logs as it
# goes; everything is packed into OUTDIR/results-STEPS.tgz at the end, with
# the bench tables beside it.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-run.sh OUTDIR [STEP...]}
shift
steps=${*:-info tests conformance nvcc bench-f64 bench-f32}
mats=$PWD/.gpu/pyfr-mats
export BESPOKE_PYFR_MATS=$mats
final=$out
# Logs and reports are written under OUTDIR/work as the steps run, so a
# run cut short still leaves what it finished.
out=$final/work
mkdir -p "$out"
limit=${BESPOKE_STEP_LIMIT:-1200}
status=0
step() { # step NAME SECONDS COMMAND...
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - t0)) s"
  [ $rc = 0 ] || status=1
}

# The board's clocks, power and throttle reasons every half second, the
# whole run (work/smi.csv): under its power cap a GPU's clocks dip within a
# second of dense kernels (H200, 700 W, 2026-11-28), which moves their times.
smi=
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 500 > "$out/smi.csv" 2>&1 &
  smi=$!
fi

for s in $steps; do case $s in
info)
  step machine 60 bash -c 'nvidia-smi; nvcc --version'
  step devices 180 bin/bespoke devices
  cat "$out/devices.log" ;;
tests)
  # A run here must exercise the GPU: BESPOKE_REQUIRE_DEVICE turns skips into failures.
  BESPOKE_REQUIRE_DEVICE=cuda step test-cuda 300 .gpu/device-cuda.test -test.v
  BESPOKE_REQUIRE_DEVICE=cuda step test-baseline 300 .gpu/baseline.test -test.v
  BESPOKE_REQUIRE_DEVICE=opencl BESPOKE_REQUIRE_OPENCL=1 step test-opencl 300 .gpu/device-opencl.test -test.v
  # The CG solvers (BP and the PUM block-Jacobi PCG), the CLI's and the PUM pipeline's CUDA tests.
  BESPOKE_REQUIRE_DEVICE=cuda step test-solve 300 .gpu/solve.test -test.v -test.run CUDA
  BESPOKE_REQUIRE_DEVICE=cuda step test-cli 300 .gpu/internal-cli.test -test.v -test.run CUDA
  BESPOKE_REQUIRE_DEVICE=cuda step test-pum 300 .gpu/pum-run.test -test.v -test.run CUDA
  grep -h -E -- '^(--- FAIL|FAIL|PASS|ok)' "$out"/test-*.log | sort | uniq -c ;;
conformance)
  BESPOKE_REQUIRE_DEVICE=cuda step conformance-cuda "${BESPOKE_CONFORMANCE_LIMIT:-330}" .gpu/conformance.test -test.v -test.run TestCUDA -test.timeout 15m
  BESPOKE_REQUIRE_DEVICE=opencl BESPOKE_OPENCL_DEVICE=nvidia step conformance-opencl-nvidia "${BESPOKE_CONFORMANCE_LIMIT:-330}" .gpu/conformance.test -test.v -test.run TestOpenCL -test.timeout 15m
  grep -h -E -- '^\s*--- (PASS|FAIL|SKIP)|verified' "$out"/conformance-*.log | head -40 ;;
nvcc)
  # gen output must compile with nvcc as well as NVRTC.
  sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  tmp=$(mktemp -d)
  for p in 1 2 3 4 5 6; do for e in quad hex tri tet; do
    bin/bespoke gen "$mats/p$p/$e/m0-sp.mtx" --backend cuda --variant cstream/x128-w2 --n 1000000 --ldb 1000000 --ldc 1000000 -o "$tmp/k.cu" &&
      timeout 300 nvcc -arch=sm_$sm -c -o "$tmp/k.o" "$tmp/k.cu" && echo "nvcc ok: p$p/$e/m0 cstream/x128-w2" || { echo "nvcc FAILED: p$p/$e/m0"; status=1; }
    bin/bespoke gen "$mats/p$p/$e/m6-sp.mtx" --backend cuda --variant cstream-ksplit --beta 1 -o "$tmp/k.cu" &&
      timeout 300 nvcc -arch=sm_$sm -c -o "$tmp/k.o" "$tmp/k.cu" && echo "nvcc ok: p$p/$e/m6 cstream-ksplit (run-time n, ldb, ldc)" || { echo "nvcc FAILED: p$p/$e/m6"; status=1; }
  done; done > "$out/nvcc.log" 2>&1
  grep -c "nvcc ok" "$out/nvcc.log"; grep FAILED "$out/nvcc.log" ;;
bench-f64|bench-f32)
  dt=${s#bench-}
  step "$s" "$limit" bin/bespoke bench "$mats" --backend cuda --dtype "$dt" --commit "$(cat .gpu/commit)" --markdown "$out/$s.md" \
    --json "$out/$s.json" --csv "$out/$s.csv" --gobench "$out/$s.txt" --plot "$out/plots-$dt"
  tail -n 14 "$out/$s.log" ;;
bench-opencl-f64|bench-opencl-f32)
  # The same bench through NVIDIA's OpenCL platform, to compare with CUDA on one card.
  dt=${s#bench-opencl-}
  step "$s" "$limit" bin/bespoke bench "$mats" --backend opencl --device nvidia --dtype "$dt" --commit "$(cat .gpu/commit)" \
    --markdown "$out/$s.md" --json "$out/$s.json" --csv "$out/$s.csv"
  tail -n 10 "$out/$s.log" ;;
bench-contract-f64|bench-contract-f32)
  # The contraction family (D along x, y and z of Q³ arrays, Q = 2…16).
  dt=${s#bench-contract-}
  step "$s" "$limit" bin/bespoke bench --family contract --order 1-15 --axis x,y,z --backend cuda --dtype "$dt" --commit "$(cat .gpu/commit)" \
    --markdown "$out/$s.md" --json "$out/$s.json" --csv "$out/$s.csv"
  tail -n 10 "$out/$s.log" ;;
sigterm|sigterm-opencl)
  # sigterm-opencl: the same through NVIDIA's OpenCL (builds in child processes).
  be=cuda; [ $s = sigterm-opencl ] && be="opencl --device nvidia"
  cache=$(mktemp -d)
  BESPOKE_CACHE_DIR=$cache bin/bespoke bench "$mats/p6/tet" "$mats/p6/hex" --backend $be --dtype f64 -q \
    --json "$out/$s.json" > "$out/$s.log" 2>&1 &
  pid=$!
  sleep "${BESPOKE_SIGTERM_AFTER:-20}"
  t0=$(date +%s.%N)
  kill -TERM $pid
  wait $pid; rc=$?
  t1=$(date +%s.%N)
  took=$(python3 -c "print(round($t1 - $t0, 2))")
  ok=$(python3 -c "import json; r=json.load(open('$out/$s.json')); print('interrupted' if r.get('interrupted') else 'complete', len(r['problems']), 'problems')" 2>&1)
  echo "$s: exit $rc after ${took} s; JSON: $ok" | tee "$out/$s-result.log"
  sleep 2; echo "$s: bespoke processes left: $(pgrep -c -f 'bin/bespoke' || true)"
  grep -c "non-Go code" "$out/$s.log" && status=1
  python3 -c "import sys; sys.exit(0 if $took <= 5 and $rc != 0 else 1)" || status=1
  rm -rf "$cache" ;;
tune-f64|tune-f32)
  # bespoke tune over the 120 operators from an empty cache (no tuning
  # store, no CUBINs), then again warm: the second run must time nothing.
  dt=${s#tune-}
  cache=$(mktemp -d)
  BESPOKE_CACHE_DIR=$cache step "$s-cold" "${BESPOKE_TUNE_LIMIT:-330}" bin/bespoke tune "$mats" --backend cuda --dtype "$dt" --commit "$(cat .gpu/commit)" \
    --json "$out/$s-cold.json" --csv "$out/$s-cold.csv" --markdown "$out/$s-cold.md"
  BESPOKE_CACHE_DIR=$cache step "$s-warm" 60 bin/bespoke tune "$mats" --backend cuda --dtype "$dt" --json "$out/$s-warm.json"
  tail -n 12 "$out/$s-cold.log"; tail -n 3 "$out/$s-warm.log"
  rm -rf "$cache" ;;
full-f64|full-f32)
  # A full search: every candidate built, verified and timed in full, no
  # tuning store; what the cost model would have pruned is recorded.
  dt=${s#full-}
  step "$s" "$limit" bin/bespoke bench "$mats" --backend cuda --dtype "$dt" --prune 0 --screen 0 --no-store -q --commit "$(cat .gpu/commit)" \
    --json "$out/$s.json" --csv "$out/$s.csv"
  tail -n 14 "$out/$s.log" ;;
opencl-hex)
  # NVIDIA OpenCL, hex p1-p6 in fp64: cold (empty cache), warm (tuning
  # store), and --retune (every program from the binary cache).
  cache=$(mktemp -d)
  hex=$(for p in 1 2 3 4 5 6; do echo "$mats/p$p/hex"; done)
  BESPOKE_CACHE_DIR=$cache step opencl-hex-cold "${BESPOKE_OPENCL_LIMIT:-330}" bin/bespoke bench $hex --backend opencl --device nvidia --dtype f64 -q \
    --commit "$(cat .gpu/commit)" --json "$out/opencl-hex-cold.json" --csv "$out/opencl-hex-cold.csv"
  BESPOKE_CACHE_DIR=$cache step opencl-hex-warm 60 bin/bespoke bench $hex --backend opencl --device nvidia --dtype f64 -q --json "$out/opencl-hex-warm.json"
  BESPOKE_CACHE_DIR=$cache step opencl-hex-retune "${BESPOKE_RETUNE_LIMIT:-200}" bin/bespoke bench $hex --backend opencl --device nvidia --dtype f64 -q --retune --json "$out/opencl-hex-retune.json"
  tail -n 12 "$out/opencl-hex-cold.log"; tail -n 3 "$out/opencl-hex-warm.log" "$out/opencl-hex-retune.log"
  rm -rf "$cache" ;;
opencl-opts)
  # How NVIDIA's OpenCL compiler options change build time and speed on
  # the largest hex kernels: one build each in parallel (own caches), then
  # each timed again alone from its binary cache.
  vs=${BESPOKE_OPTS_VARIANTS:-bstream-msplit/x32-y16,cstream-msplit/x32-y12-g}
  ops="$mats/p6/hex/m132-sp.mtx $mats/p6/hex/m460-sp.mtx"
  i=0
  for o in "" "-cl-nv-opt-level=0" "-cl-nv-opt-level=1" "-cl-opt-disable"; do
    i=$((i+1)); mkdir -p "$out/opts$i"; echo "$o" > "$out/opts$i/options"
    ( t0=$(date +%s.%N); BESPOKE_CACHE_DIR=$out/opts$i/cache BESPOKE_OPENCL_OPTIONS="$o" timeout "${BESPOKE_OPTS_LIMIT:-240}" bin/bespoke bench $ops --backend opencl --device nvidia \
        --dtype f64 --variant "$vs" -q --reps 5 --json "$out/opts$i/cold.json" > "$out/opts$i/cold.log" 2>&1; echo "rc $? after $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" >> "$out/opts$i/cold.log" ) &
  done
  wait
  for j in 1 2 3 4; do
    BESPOKE_CACHE_DIR=$out/opts$j/cache BESPOKE_OPENCL_OPTIONS="$(cat "$out/opts$j/options")" step "opts$j-warm" 120 bin/bespoke bench $ops --backend opencl --device nvidia \
      --dtype f64 --variant "$vs" -q --json "$out/opts$j/warm.json"
    echo "options '$(cat "$out/opts$j/options")': cold $(tail -n 1 "$out/opts$j/cold.log")"; grep -E "m132|m460" "$out/opts$j-warm.log" | head -4
    rm -rf "$out/opts$j/cache"
  done ;;
fem)
  # The tensor-product family: BK1, BK3 and BK5 verified on CUDA (N = 1-8,
  # both precisions) and NVIDIA OpenCL (N = 1-4), then benched in fp64 for
  # N = 1-15 (BK5) and N = 1-12 (BK1, BK3).
  step fem-verify-cuda 240 bin/bespoke verify --family fem --kernel bk1,bk3,bk5 --order 1-8 --backend cuda
  step fem-verify-opencl 240 bin/bespoke verify --family fem --kernel bk1,bk3,bk5 --order 1-4 --backend opencl --device nvidia
  for k in bk5 bk1 bk3; do
    orders=1-15; [ "$k" = bk5 ] || orders="${BESPOKE_FEM_ORDERS:-1-12}"
    step "fem-bench-$k" "${BESPOKE_FEM_LIMIT:-300}" bin/bespoke fem bench --kernel "$k" --order "$orders" --backend cuda --dtype f64 -q --commit "$(cat .gpu/commit)" \
      --json "$out/fem-bench-$k.json" --csv "$out/fem-bench-$k.csv" --markdown "$out/fem-bench-$k.md" --plot "$out/fem-plots-$k"
  done
  step fem-bench-bp 300 bin/bespoke fem bench --kernel bp5,bp3 --order "${BESPOKE_BP_ORDERS:-1-10}" --backend cuda --dtype f64 --bp-json "$out/fem-bench-bp.json"
  tail -n 3 "$out/fem-verify-cuda.log" "$out/fem-verify-opencl.log"; tail -n 8 "$out"/fem-bench-bk*.log; cat "$out/fem-bench-bp.log" ;;
ab)
  # Side-by-side re-timing of pairs of candidates, one bench per line of
  # .gpu/ab.txt ("DTYPE OPERATOR VARIANT VARIANT N", e.g. a tuned choice
  # and the best of a full search that disagreed with it).
  mkdir -p "$out/ab"; i=0
  while read -r dt op v1 v2 n; do
    i=$((i+1))
    timeout 60 bin/bespoke bench "$mats/$op-sp.mtx" --backend cuda --dtype "$dt" --variant "$v1,$v2" --n "$n" --no-store --no-baselines -q --reps 100 \
      --json "$out/ab/$i.json" > "$out/ab/$i.log" 2>&1 || status=1
  done < .gpu/ab.txt
  echo "ab: $i pairs" ;;
sweep)
  # Named variants of PyFR operators timed side by side, no pruning, one
  # bench per line of .gpu/sweep.txt ("DTYPE OPERATOR VARIANT,VARIANT,…",
  # operator relative to the PyFR matrices, e.g. "f64 p6/tet/m460
  # dmma/…,dmma/…"); each bench's CSV holds every candidate, and the
  # six fastest of each are printed (% of the roof, registers, spills).
  # BESPOKE_SWEEP_FILE names another list, e.g. scripts/sweep-regA.txt
  # (dmma with α·A in registers, -k, on the p5–p6 tets and p6/tri/m460).
  mkdir -p "$out/sweep"; i=0
  while read -r dt op vs; do
    [ -n "$vs" ] || continue
    i=$((i+1))
    timeout "${BESPOKE_SWEEP_LIMIT:-150}" bin/bespoke bench "$mats/$op-sp.mtx" --backend cuda --dtype "$dt" --variant "$vs" --prune 0 --no-store --no-baselines -q \
      --csv "$out/sweep/$i.csv" > "$out/sweep/$i.log" 2>&1 || { status=1; echo "sweep $i ($dt $op): $(tail -1 "$out/sweep/$i.log")"; }
    echo "== $dt $op: $(($(wc -l < "$out/sweep/$i.csv" 2>/dev/null || echo 1) - 1)) candidates"
    tail -n +2 "$out/sweep/$i.csv" 2>/dev/null | awk -F, '$19 == "true" {printf "%6.1f %s regs %s spill %s\n", 100 * $17, $12, $20, $21}' | sort -rn | head -6
  done < "${BESPOKE_SWEEP_FILE:-.gpu/sweep.txt}" ;;
pum)
  # PUM integration + assembly on the device (issue 16): the thesis's 2-D
  # level 9 at p = 1…5 and 3-D level 6 at p = 1, 2, fp64 and fp32, both
  # assembly strategies (atomic, colour) per run; JSON per case.
  for dt in f64 f32; do
    for p in 1 2 3 4 5; do
      step "pum-2d-l9-p$p-$dt" "${BESPOKE_PUM_LIMIT:-300}" bin/bespoke pum bench --dim 2 --level 9 --degree "$p" --backend cuda --dtype "$dt" --json "$out/pum-2d-l9-p$p-$dt.json"
    done
    for p in 1 2; do
      step "pum-3d-l6-p$p-$dt" "${BESPOKE_PUM_LIMIT:-300}" bin/bespoke pum bench --dim 3 --level 6 --degree "$p" --backend cuda --dtype "$dt" --json "$out/pum-3d-l6-p$p-$dt.json"
    done
  done
  cat "$out"/pum-*.log | grep -E '^ +cuda' ;;
pum-sweep)
  # Group-kernel shapes against each other, fused, integration and total
  # ms: BESPOKE_PUM_CASES ("dim level degree dtype", ';'-separated) times
  # BESPOKE_PUM_VARIANTS (extra pum bench flags, ';'-separated; "-" for
  # the defaults), e.g. "--mma 16 --threads 256". Each run builds its
  # kernels: on the H100 (2026-11-28) 5–12 s a run, so 42 runs overran a
  # 480 s call; print as it goes (the results pack comes at the end).
  mkdir -p "$out/sweep"
  IFS=';' read -ra cases <<< "${BESPOKE_PUM_CASES:-2 9 5 f64;2 9 5 f32;3 6 2 f64;3 6 2 f32}"
  IFS=';' read -ra variants <<< "${BESPOKE_PUM_VARIANTS:---mma 0;--mma 16;--mma 32}"
  n=0
  for c in "${cases[@]}"; do
    read -r dim lvl deg dt <<< "$c"
    for vflags in "${variants[@]}"; do
      n=$((n + 1))
      [ "$vflags" = - ] && vflags=
      log="$out/sweep/$n.log"
      # shellcheck disable=SC2086
      timeout 120 bin/bespoke pum bench --dim "$dim" --level "$lvl" --degree "$deg" --backend cuda --dtype "$dt" --strategy fused \
        --reps "${BESPOKE_PUM_REPS:-3}" $vflags --json "$out/sweep/$n.json" > "$log" 2>&1 || { status=1; echo "failed: $c $vflags: $(tail -1 "$log")"; continue; }
      printf '%s %sd l%s p%s [%s]: ' "$dt" "$dim" "$lvl" "$deg" "${vflags:-defaults}"
      grep -E '^ +cuda' "$log" | awk '{print "integr", $12, "total", $15}'
    done
  done ;;
integrate)
  # Element-matrix integration (issue 15): the family's conformance part
  # on CUDA and NVIDIA OpenCL, then integrate bench (2^22 elements, full
  # entry-major matrices) for prism, tet and hex, Laplace and CDR, in each
  # precision on CUDA, prism also through NVIDIA OpenCL; the prism f64
  # bench again on the warm tuning store (should measure nothing).
  cache=$out/integrate-cache
  BESPOKE_REQUIRE_DEVICE=cuda step integrate-verify-cuda 300 .gpu/conformance.test -test.v -test.run 'TestCUDA/integrate' -test.timeout 10m
  BESPOKE_REQUIRE_DEVICE=opencl BESPOKE_OPENCL_DEVICE=nvidia step integrate-verify-opencl 300 .gpu/conformance.test -test.v -test.run 'TestOpenCL/integrate' -test.timeout 10m
  for dt in f64 f32; do
    for el in prism tet hex; do
      BESPOKE_CACHE_DIR=$cache step "integrate-bench-$el-$dt" "${BESPOKE_INTEGRATE_LIMIT:-300}" bin/bespoke integrate bench --element "$el" --problem laplace,cdr \
        --backend cuda --dtype "$dt" -q --commit "$(cat .gpu/commit)" --json "$out/integrate-bench-$el-$dt.json" --markdown "$out/integrate-bench-$el-$dt.md"
    done
    BESPOKE_CACHE_DIR=$cache step "integrate-opencl-prism-$dt" "${BESPOKE_INTEGRATE_LIMIT:-300}" bin/bespoke integrate bench --element prism --problem laplace,cdr \
      --backend opencl --device nvidia --dtype "$dt" -q --commit "$(cat .gpu/commit)" --json "$out/integrate-opencl-prism-$dt.json" --markdown "$out/integrate-opencl-prism-$dt.md"
  done
  BESPOKE_CACHE_DIR=$cache step integrate-bench-prism-f64-warm 60 bin/bespoke integrate bench --element prism --problem laplace,cdr --backend cuda --dtype f64 -q \
    --json "$out/integrate-bench-prism-f64-warm.json"
  grep -h -E -- '^(--- FAIL|FAIL|ok|PASS)|verified' "$out"/integrate-verify-*.log; grep -h -E -- '\*w|geomean' "$out"/integrate-bench-*.log "$out"/integrate-opencl-*.log ;;
streamed)
  # Streamed stores and the integration family's /nt and /wedge variants
  # on the GPU backends: the IR samples and the family's conformance part
  # on CUDA (__stcs) and NVIDIA OpenCL (plain stores).
  BESPOKE_REQUIRE_DEVICE=cuda step streamed-cuda 300 .gpu/conformance.test -test.v -test.run 'TestCUDA/(ir|integrate)' -test.timeout 10m
  BESPOKE_REQUIRE_DEVICE=opencl BESPOKE_OPENCL_DEVICE=nvidia step streamed-opencl 300 .gpu/conformance.test -test.v -test.run 'TestOpenCL/(ir|integrate)' -test.timeout 10m
  grep -h -E -- '^\s*--- (PASS|FAIL|SKIP)|verified|FAIL' "$out"/streamed-*.log ;;
write-mix)
  # How far a kernel that mostly writes can come against the roof (a copy
  # or an in-place update): synthetic β = 0 operators from almost only
  # reads (1×32) to almost only writes (32×1), both precisions. On the
  # H100 (2026-11-28) 32×1 reached 93.8 % (f32) and 94.8 % (f64).
  mix=$(mktemp -d)
  awk 'BEGIN {
    h = "%%MatrixMarket matrix coordinate real general"
    f = "'"$mix"'/w32x1-sp.mtx"; print h > f; print "32 1 32" > f; for (i = 1; i <= 32; i++) print i, 1, 0.5 + i / 64 > f
    f = "'"$mix"'/w24x8-sp.mtx"; print h > f; print "24 8 24" > f; for (i = 1; i <= 24; i++) print i, (i - 1) % 8 + 1, 0.5 + i / 64 > f
    f = "'"$mix"'/e8x8-sp.mtx"; print h > f; print "8 8 8" > f; for (i = 1; i <= 8; i++) print i, i, 0.5 + i / 64 > f
    f = "'"$mix"'/r1x32-sp.mtx"; print h > f; print "1 32 32" > f; for (j = 1; j <= 32; j++) print 1, j, 0.5 + j / 64 > f
  }'
  for dt in f32 f64; do
    step "write-mix-$dt" 300 bin/bespoke bench "$mix" --backend cuda --dtype "$dt" --beta 0 --no-store -q --no-baselines \
      --markdown "$out/write-mix-$dt.md"
    grep -E '^\| [a-z][0-9]' "$out/write-mix-$dt.md" | cut -d'|' -f2,4,7,10
  done
  rm -rf "$mix" ;;
profile)
  # Nsight Compute on chosen kernels: BESPOKE_PROFILE is "operator dtype
  # variant" triples, ';'-separated (operator relative to the PyFR
  # matrices, e.g. "p6/tet/m460 f64 dmma/m16n8k4-r2-w4-x2-c28-t32-a3-g").
  # --set full, every metric as raw CSV (smsp__average_warps_issue_stalled_*,
  # sm__pipe_tensor_op_*_cycles_active …), one launch after the
  # verification launches.
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  IFS=';' read -ra profs <<< "${BESPOKE_PROFILE:-p6/tet/m460 f64 dmma/m16n8k4-r2-w4-x2-c28-t32-a3-g}"
  n=0
  for pr in "${profs[@]}"; do
    read -r op dt variant <<< "$pr"
    n=$((n + 1))
    fam=${variant%%/*}
    timeout 120 "$ncu" --clock-control none --set full --csv --page raw -k "regex:bespoke_${fam//-/_}" --launch-skip 2 --launch-count 1 \
      bin/bespoke bench "$mats/$op-sp.mtx" --backend cuda --dtype "$dt" --variant "$variant" --no-store -q --no-baselines --reps 3 --warmup 2 \
      > "$out/profile-$n.csv" 2> "$out/profile-$n.err" || status=1
    echo "profile $n: $op $dt $variant: $(wc -c < "$out/profile-$n.csv") bytes"
  done ;;
timer-ab)
  # Two builds timed alternately (A B B A) on the same operators, default
  # search, no tuning store: bin/bespoke-old (build it from the commit to
  # compare against) and bin/bespoke. BESPOKE_AB_OPS names the operators.
  ops=${BESPOKE_AB_OPS:-p6/tet/m460 p5/tet/m132 p3/hex/m0 p6/hex/m460}
  files=$(for o in $ops; do printf '%s ' "$mats/$o-sp.mtx"; done)
  i=0
  for dt in f64 f32; do for which in old new new old; do
    i=$((i + 1)); exe=bin/bespoke; [ $which = old ] && exe=bin/bespoke-old
    step "ab-$i-$which-$dt" 300 $exe bench $files --backend cuda --dtype $dt --no-store -q --json "$out/ab-$i-$which-$dt.json"
    python3 scripts/bench-summary.py "$out/ab-$i-$which-$dt.json"
  done; done ;;
verify-c|verify-opencl)
  be=${s#verify-}
  step "$s" "${BESPOKE_VERIFY_LIMIT:-560}" nice -n 10 bin/bespoke verify "$mats" --backend "$be" --device "${BESPOKE_VERIFY_DEVICE:-}" --jobs "${BESPOKE_VERIFY_JOBS:-6}"
  grep -v '^ok ' "$out/$s.log" | tail -n 8 ;;
*) echo "unknown step $s"; status=2 ;;
esac; done
[ -n "$smi" ] && kill "$smi" 2>/dev/null
cp "$out"/bench-*.log "$final"/ 2>/dev/null
tar czf "$final/results-$(echo $steps | tr ' ' '-').tgz" -C "$out" .
echo "gpu-run: status $status"
exit $status
