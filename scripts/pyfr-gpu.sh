#!/usr/bin/env bash
# PyFR with bespoke's provider against stock PyFR on a GPU machine without
# Go: scripts/pyfr-check.sh per lane of cases, one lane per GPU, then the
# tables of all lanes together. Prepare here: a CGO_ENABLED=0 bin/bespoke
# and a copy of ../shared/pyfr in .pyfr/ (ignored); carry bin and .pyfr.
#
#   scripts/pyfr-gpu.sh OUTDIR "LANE" ["LANE" ...]
#
# A LANE is a space-separated list of pyfr-check cases, e.g. "tgv:200:double".
# Each lane runs stock PyFR twice (cold and warm compile caches), then with
# bespoke cold (empty tuning store) and warm, on CUDA.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: pyfr-gpu.sh OUTDIR LANE...}; shift
mkdir -p "$out"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l); [ "$ngpu" -ge 1 ] || ngpu=1
export PYFR_DIR=${PYFR_DIR:-$repo/.pyfr} BESPOKE=${BESPOKE:-$repo/bin/bespoke}
export PYFR_BACKEND=cuda PYFR_MPI_FALLBACK=1 PYFR_CHECK_STOCK_WARM=1 BESPOKE_PYFR_LIMIT=${BESPOKE_PYFR_LIMIT:-8}
i=0
for lane in "$@"; do
  CUDA_VISIBLE_DEVICES=$((i % ngpu)) "$repo/scripts/pyfr-check.sh" "$out/lane$i" $lane > "$out/lane$i.log" 2>&1 &
  i=$((i + 1))
done
wait
mkdir -p "$out/all"
for d in "$out"/lane*/; do cp -r "$d"* "$out/all/" 2>/dev/null; done
py=/usr/bin/python3; [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
PYTHONPATH=$repo/python "$py" -m bespoke_pyfr.summary "$out/all" > "$out/summary.md"
cat "$out"/lane*/summary.txt "$out/summary.md"
