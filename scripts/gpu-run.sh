#!/usr/bin/env bash
# One run on the GPU machine: CUDA (and NVIDIA OpenCL) tests, a CUDA compile
# check with nvcc, then the full benchmark over the PyFR matrices in fp64 and
# fp32. Prepare with scripts/gpu-build.sh and carry bin/ and .gpu/.
#
#   scripts/gpu-run.sh OUTDIR [tests|bench|all]
#
# Results (logs, JSON, CSV, Go benchmark format, SVG plots) are packed into
# OUTDIR/results.tgz; a summary is printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-run.sh OUTDIR [tests|bench|all]}
what=${2:-all}
res=$(mktemp -d)
mats=$PWD/.gpu/pyfr-mats
export BESPOKE_PYFR_MATS=$mats
status=0

{ nvidia-smi; nvcc --version; } > "$res/machine.txt" 2>&1
bin/bespoke devices 2>&1 | tee "$res/devices.txt"

if [ "$what" != bench ]; then
  # A run here must exercise the GPU: a skip is a failure.
  BESPOKE_REQUIRE_DEVICE=cuda .gpu/device-cuda.test -test.v > "$res/test-cuda.log" 2>&1 || status=1
  BESPOKE_REQUIRE_DEVICE=cuda .gpu/baseline.test -test.v > "$res/test-baseline.log" 2>&1 || status=1
  BESPOKE_REQUIRE_DEVICE=cuda .gpu/conformance.test -test.v -test.run 'TestCUDA' -test.timeout 20m > "$res/test-conformance-cuda.log" 2>&1 || status=1
  BESPOKE_REQUIRE_DEVICE=opencl BESPOKE_OPENCL_DEVICE=nvidia .gpu/conformance.test -test.v -test.run 'TestOpenCL' -test.timeout 20m > "$res/test-conformance-opencl-nvidia.log" 2>&1 || status=1
  for f in "$res"/test-*.log; do echo "$(basename "$f"): $(grep -E '^(PASS|FAIL|ok)' "$f" | tail -1)"; grep -E -- '--- FAIL' "$f" | head -5; done
  # gen output must compile with nvcc as well as NVRTC.
  sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  for p in 1 2 3 4 5 6; do for e in hex tet; do
    bin/bespoke gen "$mats/p$p/$e/m460-sp.mtx" --backend cuda --variant bstream/x128-w2 --n 1000000 --ldb 1000000 --ldc 1000000 -o "$res/k.cu" &&
    nvcc -arch=sm_$sm -c -o "$res/k.o" "$res/k.cu" && echo "nvcc ok: p$p/$e/m460 bstream-w2" || { echo "nvcc FAILED: p$p/$e/m460"; status=1; }
    bin/bespoke gen "$mats/p$p/$e/m6-sp.mtx" --backend cuda --variant cstream-ksplit --beta 1 -o "$res/k.cu" &&
    nvcc -arch=sm_$sm -c -o "$res/k.o" "$res/k.cu" && echo "nvcc ok: p$p/$e/m6 ksplit" || { echo "nvcc FAILED: p$p/$e/m6"; status=1; }
  done; done 2>&1 | tee "$res/nvcc.txt"
  rm -f "$res/k.cu" "$res/k.o"
fi

if [ "$what" != tests ]; then
  for dt in f64 f32; do
    bin/bespoke bench "$mats" --backend cuda --dtype "$dt" -q \
      --json "$res/bench-$dt.json" --csv "$res/bench-$dt.csv" --gobench "$res/bench-$dt.txt" \
      --plot "$res/plots-$dt" > "$res/bench-$dt.table" 2> "$res/bench-$dt.err" || status=1
    echo "== bench $dt"; tail -n 12 "$res/bench-$dt.table"; tail -n 3 "$res/bench-$dt.err"
  done
fi

mkdir -p "$out"
tar czf "$out/results.tgz" -C "$res" .
echo "gpu-run: status $status"
exit $status
