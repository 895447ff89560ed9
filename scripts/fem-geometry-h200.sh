#!/usr/bin/env bash
# Issue 41, item 1 on the H200: BK5 and BP5 at N = 3–8 in fp64 with the
# geometric factors stored (layouts without a suffix), computed from the
# 8 vertices (/tri) and from one affine map per element (/aff), each
# candidate's % roof against its own traffic. Done when the /tri or /aff
# rows reach 1.8× the GDOF/s of the stored ones. Prepare here: a
# CGO_ENABLED=0 bin/bespoke; carry bin. Not run on the VM.
#
#   OUT=dir scripts/fem-geometry-h200.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?set OUT to the results folder}
b=${BESPOKE:-bin/bespoke}
mesh=(--nodes testdata/mesh/cartesian-4x4x4-nodes.npy --cells testdata/mesh/cartesian-4x4x4-cells.npy)
for n in 3 4 5 6 7 8; do
	# Elements enough for a /tri launch (u, v and 24 vertices an
	# element) to move 1 GiB; the stored layouts then move 4–4.5 GiB.
	e=$(( (1 << 30) / ((2 * (n + 1) ** 3 + 24) * 8) ))
	common=(--kernel bk5 --order "$n" --n "$e" --dtype f64 --backend cuda --no-store)
	# On the built-in perturbed box: stored and trilinear.
	"$b" fem bench "${common[@]}" --json "$out/bk5-n$n-perturbed.json" | tee "$out/bk5-n$n-perturbed.txt"
	# On a Cartesian mesh: stored, trilinear and affine.
	"$b" fem bench "${common[@]}" "${mesh[@]}" --json "$out/bk5-n$n-cartesian.json" | tee "$out/bk5-n$n-cartesian.txt"
done
# BP5 on the Cartesian box (2^23 E-vector nodes): the default layouts,
# each with every geometry source.
"$b" fem bench --kernel bp5 --order 3-8 --dtype f64 --backend cuda --no-store --bp-json "$out/bp5.json" | tee "$out/bp5.txt"
