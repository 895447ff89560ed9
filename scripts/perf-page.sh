#!/bin/sh
# Regenerates docs/performance.md, its charts (docs/plots) and the
# per-problem tables that do not fit on it (docs/perf) from the stored
# bench results, docs/results/DEVICE/*.json and *.json.gz (files that
# `bespoke bench`, `bespoke fem bench` or `bespoke integrate bench` wrote
# with --json; the large ones gzipped).
# BESPOKE names the binary (default: go run ./cmd/bespoke).
set -eu
cd "$(dirname "$0")/.."
set --
for f in docs/results/*/*.json docs/results/*/*.json.gz; do
	[ -e "$f" ] && set -- "$@" "$f"
done
if [ $# = 0 ]; then
	echo "perf-page: no results under docs/results/*/" >&2
	exit 1
fi
${BESPOKE:-go run ./cmd/bespoke} report perf --out docs/performance.md --plots docs/plots --tables docs/perf "$@"
echo "perf-page: docs/performance.md from $# files ($(wc -l < docs/performance.md) lines)"
