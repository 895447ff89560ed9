#!/usr/bin/env bash
# Issue 41, item 2 on the H200: what binds each fem operator. Nsight
# Compute profiles one launch of the best stored-factor kernel of BK1,
# BK3 and BK5 at every order (the variants in the stored bench results,
# docs/results/h200/fem-*.json), four orders at a time, one per GPU, and
# writes its raw metrics (stall reasons, shared-memory wavefronts and bank
# conflicts, pipe use, occupancy) as CSV; scripts/ncu-table.py reduces
# them to docs/results/h200/ncu-fem-f64.csv. Clocks are left alone
# (--clock-control none). Prepare here: a CGO_ENABLED=0 bin/bespoke and
# the list "KERNEL ORDER VARIANT" per line in BEST; carry bin.
#
#   OUT=dir BEST=best.txt scripts/ncu-fem.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?set OUT to the results folder}
best=${BEST:?set BEST to the kernel list}
b=${BESPOKE:-bin/bespoke}
ncu=$(command -v ncu) || { echo "ncu-fem: Nsight Compute (ncu) is not on PATH" >&2; exit 1; }
mkdir -p "$out"
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
	--section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section Occupancy
	--section LaunchStats --section InstructionStats)
gpus=$(nvidia-smi -L | wc -l)
profile() { # kernel order variant gpu
	CUDA_VISIBLE_DEVICES=$4 timeout 120 "$ncu" --clock-control none -k "regex:bespoke_$1_n$2_" \
		--launch-skip 3 --launch-count 1 "${sections[@]}" --page raw --csv \
		"$b" bench --family fem --kernel "$1" --order "$2" --variant "$3" --backend cuda \
		--no-baselines --no-store -q --reps 4 --warmup 1 --rounds 1 --screen 0 \
		>"$out/$1-n$2.csv" 2>"$out/$1-n$2.err"
	echo "$1 N=$2 $3: exit $?"
}
i=0
while read -r k n v; do
	profile "$k" "$n" "$v" $((i % gpus)) &
	i=$((i + 1))
	if ((i % gpus == 0)); then wait; fi
done <"$best"
wait
