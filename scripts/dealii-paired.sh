#!/bin/bash
# Issue 41 on a CPU: deal.II MatrixFree (../shared/dealii, built as its
# README says; DEALII names the binary) beside bespoke fem bench --backend c,
# paired per order. scripts/dealii-ratio.py OUT prints the ratios.
#
#   OUT=dir PASSES=2 ORDERS="2 3 4 5 6 7 8" MESHES="deformed affine" scripts/dealii-paired.sh
# Paired: per pass and N, deal.II (2 ranks, AVX-512) on the deformed and the
# affine (Cartesian) mesh, then bespoke's fem bench (C) on its perturbed box
# and on a Cartesian mesh (geometry in the kernel offered there).
set -u
OUT=${OUT:-/tmp/dealii/paired2}; P=$(cd "$(dirname "$0")/.." && pwd); B=${BESPOKE:-$P/bin/bespoke}
ORDERS=${ORDERS:-"2 3 4 5 6 7 8"}; PASSES=${PASSES:-2}; MESHES=${MESHES:-"deformed affine"}
mkdir -p "$OUT"
export BESPOKE_CACHE_DIR=/tmp/dealii/bcache
for pass in $(seq 1 $PASSES); do
for n in $ORDERS; do
  for mesh in $MESHES; do
    echo "== p$pass dealii $mesh N=$n $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.log"
    mpirun --allow-run-as-root -np 2 --bind-to none ${DEALII:-/tmp/dealii/build512/bench_dealii} --fe dg --mesh $mesh \
      --order $n --threads 1 >> "$OUT/dealii_p$pass.jsonl" 2>> "$OUT/dealii.err"
  done
  echo "== p$pass bespoke N=$n $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.log"
  case " $MESHES " in *" deformed "*)
  (cd $P && $B fem bench --kernel bk1,bk3,bk5 --order $n --backend c --dtype f64 --no-store -q \
     --json "$OUT/bespoke_deformed_p${pass}_n$n.json" > "$OUT/bespoke_deformed_p${pass}_n$n.txt" 2>&1) ;;
  esac
  case " $MESHES " in *" affine "*)
  (cd $P && $B fem bench --kernel bk1,bk3,bk5 --order $n --backend c --dtype f64 --no-store -q \
     --nodes testdata/mesh/cartesian-4x4x4-nodes.npy --cells testdata/mesh/cartesian-4x4x4-cells.npy \
     --json "$OUT/bespoke_affine_p${pass}_n$n.json" > "$OUT/bespoke_affine_p${pass}_n$n.txt" 2>&1) ;;
  esac
done
done
echo "== end $(date +%T)" >> "$OUT/load.log"
