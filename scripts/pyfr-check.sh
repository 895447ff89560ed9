#!/usr/bin/env bash
# PyFR with bespoke's kernel provider against stock PyFR, on small cases.
#
#   scripts/pyfr-check.sh [OUTDIR] [CASE ...]      (default: vortex:20 tet:2:2:5:single)
#
# CASE: vortex:NSTEPS[:PRECISION]  the 2-D Euler vortex of ../shared/pyfr/case (p3, double)
#       tgv:NSTEPS[:PRECISION]     its 3-D Taylor-Green vortex (32^3 hexahedra, p3, single;
#                                   a GPU case: far too slow for PoCL on a small machine)
#       tet:N:ORDER:NSTEPS[:PRECISION] or pri:N:ORDER:NSTEPS[:PRECISION]
#                                   a periodic box of N^3 cubes cut into tetrahedra or
#                                   prisms (python -m bespoke_pyfr.cases), order 1-6
# Each case runs three times: stock PyFR; through `python3 -m bespoke_pyfr` with an empty
# tuning store (PyFR's autotuning with bespoke competing; winners recorded); and again
# (warm: the stored winners are rebuilt, nothing is timed). Each bespoke solution must match
# the stock one (max relative difference 1e-10 in double, 1e-5 in single), the reports must
# name each operator's winner, bespoke must have won at least one operator of each case,
# and the warm run must have taken every choice from the store.
# Environment:
#   PYFR_BACKEND   opencl (default) or cuda
#   PYFR_DIR       PyFR as carried in ../shared/pyfr (default: that folder beside the repo)
#   PYFR_PY        the Python (default /usr/bin/python3)
#   BESPOKE        the bespoke binary (default: bespoke on PATH, else built here with go)
#   BESPOKE_PYFR_LIMIT  candidates per operator (default 4: PoCL builds are slow)
#   PYFR_STEP_LIMIT     seconds for each pyfr run (default 240)
#   PYFR_CHECK_STOCK_WARM=1  also run stock PyFR a second time on its own warm
#                  compile cache (stock2), the fair baseline for the warm run's set-up
#   PYFR_MPI_FALLBACK=1  the MPICH runtime carried with PyFR (GPU images), as run.sh
#   PYFR_CHECK_KEEP=1    keep the runs' solutions (soln-*.pyfrs), to compare across precisions
#   PYFR_CHECK_FP64_REF=1  for single-precision cases, also run stock PyFR in double and say
#                  how far stock's and bespoke's single solutions each lie from it (the note
#                  fp64ref:ok where bespoke's is no further than 1.1 x stock's, fp64ref:worse
#                  otherwise); two fp32 runs can differ by more than the 1e-5 limit while
#                  both are as close to the fp64 solution (docs/pyfr.md)
# Every run goes through `python3 -m bespoke_pyfr` (the stock ones with
# BESPOKE_PYFR_PROVIDER=off), so each report has the run's set-up and time
# per step ("run"); OUTDIR/summary.json gathers them with every operator's
# provider times and winner.
# Writes OUTDIR/summary.txt and, per case, the runs' logs, reports and check output.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$(mktemp -d /tmp/pyfr-check.XXXXXX)}; shift || true
cases=${*:-vortex:20 tet:2:2:5:single}
mkdir -p "$out" && out=$(cd "$out" && pwd)
pyfr=${PYFR_DIR:-$repo/../shared/pyfr}
[ -d "$pyfr/py/pyfr" ] || { echo "pyfr-check: no PyFR at $pyfr (set PYFR_DIR)" >&2; exit 2; }
pyfr=$(cd "$pyfr" && pwd)
be=${PYFR_BACKEND:-opencl}
py=${PYFR_PY:-}
[ -n "$py" ] || { [ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3 || py=/usr/bin/python3; }
export BESPOKE_PYFR_LIMIT=${BESPOKE_PYFR_LIMIT:-4}

# PyFR's environment, as its run.sh sets it
pp=$pyfr/py
"$py" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' && pp=$pyfr/cpu:$pp
export PYTHONPATH=$repo/python:$pp${PYTHONPATH:+:$PYTHONPATH}:$pyfr/py-fallback
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$pyfr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SPATIALINDEX_C_LIBRARY=$pyfr/lib/libspatialindex_c.so.6
# PyFR opens libOpenCL.so, which only the -dev package provides
if [ "$be" = opencl ] && [ -z "${PYFR_OPENCL_LIBRARY_PATH:-}" ] && ! ldconfig -p | grep -q 'libOpenCL.so '; then
  lib=$(ldconfig -p | awk '/libOpenCL.so.1 /{print $NF; exit}')
  [ -n "$lib" ] && export PYFR_OPENCL_LIBRARY_PATH=$lib
fi

if [ "${PYFR_MPI_FALLBACK:-0}" = 1 ]; then
  mpi=$(mktemp -d /tmp/pyfr-mpi.XXXXXX)
  "$py" -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$pyfr/mpich-fallback.tar.xz" "$mpi"
  export LD_LIBRARY_PATH=$mpi/mpich-fallback:$LD_LIBRARY_PATH MPI4PY_LIBMPI=$mpi/mpich-fallback/libmpi.so.12
fi
[ "$be" = cuda ] && [ -f "$pyfr/case/findlibs.py" ] && eval "$("$py" "$pyfr/case/findlibs.py" 2>/dev/null)"

bin=${BESPOKE:-$(command -v bespoke || true)}
if [ -z "$bin" ]; then
  echo "pyfr-check: building bespoke"
  (cd "$repo" && CGO_ENABLED=0 go build -o "$out/bespoke" ./cmd/bespoke) || exit 2
  bin=$out/bespoke
fi
export BESPOKE=$bin

status=0
printf '%-22s %-7s %-8s %9s %9s %9s %s\n' case prec result stock_s cold_s warm_s note > "$out/summary.txt"
for spec in $cases; do
  IFS=: read -r kind a b c d <<< "$spec"
  name=${spec//:/-}; w=$out/$name; rm -rf "$w"; mkdir -p "$w/stock" "$w/cold" "$w/warm"
  case $kind in
    vortex|tgv) prec=$b
            "$py" "$pyfr/case/mkcase.py" "$kind" "$a" "$w/stock" $prec > "$w/prep.log" 2>&1 ;;
    tet|pri) prec=${d:-double}
            "$py" -m bespoke_pyfr.cases "$kind" "$a" "$b" "$w/stock" --steps "$c" --precision "$prec" > "$w/prep.log" 2>&1 ;;
    *) echo "pyfr-check: unknown case $spec" >&2; status=1; continue ;;
  esac || { echo "pyfr-check: $spec: could not write the case (see $w/prep.log)"; status=1; continue; }
  [ -n "$prec" ] || prec=$(awk -F' *= *' '/^precision/{print $2; exit}' "$w/stock/case.ini")
  (cd "$w/stock" && "$py" -m pyfr import mesh.msh mesh.pyfrm) >> "$w/prep.log" 2>&1 ||
    { echo "pyfr-check: $spec: pyfr import failed (see $w/prep.log)"; status=1; continue; }
  runs="stock cold warm"
  [ "${PYFR_CHECK_STOCK_WARM:-0}" = 1 ] && runs="stock stock2 cold warm"
  for r in $runs; do [ $r = stock ] || { mkdir -p "$w/$r"; cp "$w/stock/case.ini" "$w/stock/mesh.pyfrm" "$w/$r/"; }; done
  export BESPOKE_CACHE_DIR=$w/bespoke-cache        # an empty tuning store per case
  # PyFR's own compile caches, shared by the case's runs: empty for the
  # first stock run, warm for the later ones
  export PYFR_CUDA_CACHE_DIR=$w/pyfr-cache-cuda PYFR_OMP_CACHE_DIR=$w/pyfr-cache-omp
  declare -A secs=()
  for r in $runs; do
    provider=on; case $r in stock*) provider=off ;; esac
    t0=$(date +%s.%N)
    (cd "$w/$r" && BESPOKE_PYFR_PROVIDER=$provider BESPOKE_PYFR_REPORT="$w/$r/report.json" timeout "${PYFR_STEP_LIMIT:-240}" \
      "$py" -m bespoke_pyfr run -b "$be" mesh.pyfrm case.ini) > "$w/$r/run.log" 2>&1
    rc=$?
    secs[$r]=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
    [ $rc = 0 ] || { echo "pyfr-check: $spec: the $r run failed (rc $rc):"; tail -n 5 "$w/$r/run.log"; }
  done
  if [ "$prec" = single ] && [ "${PYFR_CHECK_FP64_REF:-0}" = 1 ]; then
    # The same case in double, run by stock PyFR: the reference both single runs are
    # measured against.
    mkdir -p "$w/stock64"
    case $kind in
      vortex|tgv) "$py" "$pyfr/case/mkcase.py" "$kind" "$a" "$w/stock64" double >> "$w/prep.log" 2>&1 ;;
      tet|pri) "$py" -m bespoke_pyfr.cases "$kind" "$a" "$b" "$w/stock64" --steps "$c" --precision double >> "$w/prep.log" 2>&1 ;;
    esac
    (cd "$w/stock64" && "$py" -m pyfr import mesh.msh mesh.pyfrm && BESPOKE_PYFR_PROVIDER=off \
      timeout "${PYFR_STEP_LIMIT:-240}" "$py" -m bespoke_pyfr run -b "$be" mesh.pyfrm case.ini) > "$w/stock64/run.log" 2>&1
  fi
  tol=1e-10; [ "$prec" = single ] && tol=1e-5
  result=PASS note=
  for r in cold warm; do
    soln=$(ls "$w/$r"/soln-*.pyfrs 2>/dev/null | tail -n 1)
    ref=$(ls "$w/stock"/soln-*.pyfrs 2>/dev/null | tail -n 1)
    if [ -z "$soln" ] || [ -z "$ref" ]; then result=FAIL note="no solution"; continue; fi
    "$py" -m bespoke_pyfr.check "$ref" "$soln" "$w/$r/report.json" --tol $tol --require-bespoke \
      > "$w/$r/check.txt" 2>&1 || { result=FAIL; note="$note $r-check"; }
  done
  ref64=$(ls "$w/stock64"/soln-*.pyfrs 2>/dev/null | tail -n 1)
  if [ -n "$ref64" ]; then
    fp64ref() { "$py" -m bespoke_pyfr.check "$ref64" "$1" "$w/cold/report.json" --tol 1 2>/dev/null |
      sed -n 's/^check: max relative difference \([^ ]*\).*/\1/p' | head -n 1; }
    d_stock=$(fp64ref "$(ls "$w/stock"/soln-*.pyfrs | tail -n 1)")
    d_bespoke=$(fp64ref "$(ls "$w/cold"/soln-*.pyfrs | tail -n 1)")
    echo "fp64 reference: stock single ${d_stock:-?}, bespoke single ${d_bespoke:-?}" > "$w/fp64ref.txt"
    if [ -n "$d_stock" ] && [ -n "$d_bespoke" ] && awk "BEGIN{exit !($d_bespoke <= 1.1 * $d_stock)}"; then
      note="$note fp64ref:ok"
    else
      note="$note fp64ref:worse"
    fi
  fi
  # The warm run must have timed nothing: every choice from the store
  "$py" -c 'import json, sys; ops = json.load(open(sys.argv[1]))["operators"]; sys.exit(0 if ops and all(o.get("from") == "store" for o in ops) else 1)' \
    "$w/warm/report.json" 2>/dev/null || { result=FAIL; note="$note warm-not-from-store"; }
  grep -h 'bespoke-pyfr: warning' "$w"/*/run.log > "$w/warnings.txt" 2>/dev/null && note="$note warnings:$(wc -l < "$w/warnings.txt")"
  [ $result = PASS ] || status=1
  printf '%-22s %-7s %-8s %9s %9s %9s %s\n' "$spec" "$prec" $result "${secs[stock]}" "${secs[cold]}" "${secs[warm]}" "${note# }" >> "$out/summary.txt"
  echo "$spec $prec $result" > "$w/result.txt"
  rm -f "$w"/*/mesh.pyfrm "$w/stock/mesh.msh"
  [ "${PYFR_CHECK_KEEP:-0}" = 1 ] || rm -f "$w"/*/soln-*.pyfrs
  unset secs
done
cat "$out/summary.txt"
"$py" -m bespoke_pyfr.summary "$out" > "$out/summary.md" 2> "$out/summary.err" && cat "$out/summary.md"
for f in "$out"/*/cold/check.txt; do [ -f "$f" ] && { echo "== $f"; grep -v '^check: PASS' "$f"; }; done
exit $status
