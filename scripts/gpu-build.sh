#!/usr/bin/env bash
# Build, on the development machine, everything scripts/gpu-run.sh needs on
# the GPU machine (which has no Go): the bespoke binary, the GPU test
# binaries, and a copy of the PyFR matrices (they live outside the repo).
# Everything goes to ignored folders: bin/ and .gpu/.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
go build -buildvcs=true -o bin/bespoke ./cmd/bespoke
mkdir -p .gpu
git rev-parse --short HEAD > .gpu/commit 2>/dev/null || echo unknown > .gpu/commit
for pkg in conformance device/cuda baseline device/opencl solve pum/run internal/cli; do
  go test -c -o ".gpu/$(echo "$pkg" | tr / -).test" "./$pkg"
done
rm -rf .gpu/pyfr-mats
cp -r "${BESPOKE_PYFR_MATS:-../shared/pyfr-mats}" .gpu/pyfr-mats
du -sh bin .gpu
