#!/usr/bin/env python3
"""Plots of the transfer sweep (docs/performance.md, "Transfer sweep").

    python3 bench/plot_transfers.py BENCH.json [OUT_DIR]

Reads the benchmark's JSON (t4acuda-bench --json; rows whose series starts
with "transfer sweep") or the transfer probe's (t4acuda-transfer-probe
--json; its "sweep" list, variant "auto") and writes into OUT_DIR (default
docs/images):
  transfer_sweep_ratio.png  time per call, t4acuda / raw, against size
                            (below 1: faster than the raw call), with the
                            spread across runs where the JSON has it
                            ("each synchronized" uploads are informational:
                            the raw call does not wait for its DMA);
  transfer_sweep_time.png   time per call of both sides against size.
plot_transfer_sweep(data, out_dir) is the function bench/plot.py may call.
Needs matplotlib (present on the GPU machine).
"""
import json
import math
import os
import sys

KINDS = [
    "upload pageable",
    "upload pageable, each synchronized",
    "download pageable",
    "pending download",
    "upload host buffer",
    "download host buffer",
]


def snap(x):
    """The sweep's sizes are powers of 2; the JSON may round x (%g)."""
    x = float(x)
    return 1 << int(round(math.log2(x))) if x >= 1 else 0


def sweep_points(data):
    """{kind: [(bytes, ratio, ratio_lo, ratio_hi, ours_us, raw_us)]}"""
    out = {}
    for r in data.get("rows", []):
        series = r.get("series", "")
        if not series.startswith("transfer sweep"):
            continue
        kind = series.split(":", 1)[1].strip() if ":" in series else series
        if kind.startswith("diag"):
            continue  # diagnostics, not sizes
        spread = r.get("ratio_runs") or {}
        out.setdefault(kind, []).append((
            snap(r["x"]), r["ratio"], spread.get("min", r["ratio"]),
            spread.get("max", r["ratio"]), r["t4acuda"], r["raw"]))
    probe_names = {"upload": "upload pageable",
                   "download": "download pageable",
                   "pending": "pending download",
                   "host upload": "upload host buffer",
                   "host download": "download host buffer"}
    for r in data.get("sweep", []):
        if r.get("variant") != "auto":
            continue
        kind = probe_names.get(r["operation"], r["operation"])
        out.setdefault(kind, []).append((
            r["bytes"], r["ratio"], r["ratio"], r["ratio"],
            r["t4acuda_us"]["median"], r["raw_us"]["median"]))
    for k in out:
        out[k].sort()
    return out


def size_label(n):
    n = int(n)
    if n >= 1 << 20:
        return "%d MiB" % (n >> 20)
    if n >= 1 << 10:
        return "%d KiB" % (n >> 10)
    return "%d B" % n


def plot_transfer_sweep(data, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = sweep_points(data)
    if not points:
        print("plot_transfers: no transfer sweep rows")
        return []
    os.makedirs(out_dir, exist_ok=True)
    title = "%s, driver %s, %s host cores" % (
        data.get("device", "?"), data.get("driver", "?"),
        data.get("host_cores", "?"))
    kinds = [k for k in KINDS if k in points] + \
        [k for k in points if k not in KINDS]
    xs = sorted({p[0] for k in kinds for p in points[k]})

    fig, ax = plt.subplots(figsize=(9, 5))
    for k in kinds:
        p = points[k]
        x = [q[0] for q in p]
        y = [q[1] for q in p]
        lo = [q[1] - q[2] for q in p]
        hi = [q[3] - q[1] for q in p]
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, label=k)
    ax.axhline(1.0, color="black", linewidth=1, linestyle="--")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([size_label(x) for x in xs], rotation=45)
    ax.set_ylabel("time per call, t4acuda / raw (lower is better)")
    ax.set_xlabel("bytes per transfer")
    ax.set_title("Transfer sweep: " + title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    ratio_png = os.path.join(out_dir, "transfer_sweep_ratio.png")
    fig.savefig(ratio_png, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 5))
    for i, k in enumerate(kinds):
        p = points[k]
        color = "C%d" % i
        ax.plot([q[0] for q in p], [q[4] for q in p], marker="o",
                color=color, label=k + " (t4acuda)")
        ax.plot([q[0] for q in p], [q[5] for q in p], marker="x",
                color=color, linestyle=":", label=k + " (raw)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels([size_label(x) for x in xs], rotation=45)
    ax.set_ylabel("microseconds per call (median)")
    ax.set_xlabel("bytes per transfer")
    ax.set_title("Transfer sweep: " + title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    time_png = os.path.join(out_dir, "transfer_sweep_time.png")
    fig.savefig(time_png, dpi=110)
    plt.close(fig)
    return [ratio_png, time_png]


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    with open(argv[1]) as f:
        data = json.load(f)
    out_dir = argv[2] if len(argv) > 2 else "docs/images"
    for p in plot_transfer_sweep(data, out_dir):
        print("wrote", p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
