#!/usr/bin/env python3
"""Reduce the raw Nsight Compute CSVs of scripts/ncu-fem.sh to one row per
kernel and order, with the limiter each row's figures name.

    scripts/ncu-table.py BEST CSVDIR > docs/results/h200/ncu-fem-f64.csv

BEST lists "KERNEL ORDER VARIANT" per line; CSVDIR holds KERNEL-nORDER.csv.
The limiter: "dram" where DRAM throughput is at least 80 % of its peak,
else "l1/shared" where the L1/TEX pipe (shared memory and the global loads
through L1) is at least 85 % busy, else "latency" (neither unit busy: too
few warps to hide the stalls named beside it).
"""
import csv
import sys

STALLS = ["long_scoreboard", "short_scoreboard", "mio_throttle", "barrier", "wait", "no_instruction"]


def metrics(path):
    rows = list(csv.reader(open(path)))
    for i, row in enumerate(rows):
        if row and row[0] == "ID":
            return dict(zip(row, rows[i + 1])), dict(zip(row, rows[i + 2]))
    raise SystemExit(f"ncu-table: {path} holds no profile")


def num(x):
    return float(x.replace(",", ""))


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: ncu-table.py BEST CSVDIR")
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["kernel", "order", "variant", "time_us", "dram_pct", "l1tex_pct", "shared_wavefronts_pct",
                  "shared_load_bank_conflicts_pct", "fp64_pipe_pct", "warps_active_pct", "registers"]
                 + ["stall_" + s for s in STALLS] + ["limiter"])
    for line in open(sys.argv[1]):
        if not line.strip():
            continue
        kernel, order, variant = line.split()
        units, v = metrics(f"{sys.argv[2]}/{kernel}-n{order}.csv")
        t = num(v["gpu__time_duration.sum"]) * {"ns": 1e-3, "nsecond": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3}[units["gpu__time_duration.sum"]]
        dram = num(v["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"])
        l1 = num(v["l1tex__throughput.avg.pct_of_peak_sustained_active"])
        loads = num(v["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"])
        conflicts = num(v["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"])
        stalls = [num(v[f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio"]) for s in STALLS]
        if dram >= 80:
            limiter = "dram"
        elif l1 >= 85:
            limiter = "l1/shared"
        else:
            limiter = "latency"
        out.writerow([kernel, order, variant, f"{t:.1f}", f"{dram:.1f}", f"{l1:.1f}",
                      f"{num(v['l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed']):.1f}",
                      f"{100 * conflicts / loads:.1f}" if loads else "0",
                      f"{num(v['sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active']):.1f}",
                      f"{num(v['sm__warps_active.avg.pct_of_peak_sustained_active']):.1f}",
                      v["launch__registers_per_thread"]] + [f"{s:.1f}" for s in stalls] + [limiter])


main()
