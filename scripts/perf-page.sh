#!/bin/sh
# Regenerates docs/performance.md, its charts (docs/plots) and the
# per-problem tables that do not fit on it (docs/perf) from the stored
# bench results, docs/results/DEVICE/*.json (files that `bespoke bench`,
# `bespoke fem bench` or `bespoke integrate bench` wrote with --json).
# BESPOKE names the binary (default: go run ./cmd/bespoke).
set -eu
cd "$(dirname "$0")/.."
set -- docs/results/*/*.json
if [ ! -e "$1" ]; then
	echo "perf-page: no results under docs/results/*/" >&2
	exit 1
fi
${BESPOKE:-go run ./cmd/bespoke} report perf --out docs/performance.md --plots docs/plots --tables docs/perf "$@"
echo "perf-page: docs/performance.md from $# files ($(wc -l < docs/performance.md) lines)"
