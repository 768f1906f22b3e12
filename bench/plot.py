#!/usr/bin/env python3
"""Turns the benchmark's JSON (t4acuda-bench --json) into plots.

    python3 bench/plot.py bench.json [OUTDIR]      (OUTDIR: docs/images)

Writes one PNG per scaling series (rows with a "series" and an "x"):
cost (or rate) against count for t4acuda and the raw call, with the
ratio on a second axis; and, when the JSON has transfer sweep rows
(series starting with "transfer sweep"), bench_transfer_sweep.png: the
ratio against size. Needs matplotlib.
"""
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Series -> file name and axis labels.
SCALING = {
    "launch vs alternating modules": ("bench_scaling_modules.png",
                                      "modules launched in turn"),
    "launch vs live handles": ("bench_scaling_live_launch.png",
                               "live handles (buffers)"),
    "alloc+release vs live handles": ("bench_scaling_live_alloc.png",
                                      "live handles (buffers)"),
    "aggregate launches/s vs threads": ("bench_scaling_threads.png",
                                        "threads, each on its own runtime"),
    "compile memory hit vs cached artifacts": ("bench_scaling_compile.png",
                                               "artifacts in the memory cache"),
}


def slug(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def series_rows(rows):
    out = {}
    for r in rows:
        s = r.get("series") or ""
        if s:
            out.setdefault(s, []).append(r)
    for s in out:
        out[s].sort(key=lambda r: r["x"])
    return out


def err(rows, key):
    """Asymmetric error bars from the per-row min / max."""
    stats = [r.get(key + "_stats") for r in rows]
    med = [r[key] for r in rows]
    lo = [m - s["min"] if s else 0 for m, s in zip(med, stats)]
    hi = [s["max"] - m if s else 0 for m, s in zip(med, stats)]
    return [lo, hi]


def plot_scaling(name, rows, meta, outdir):
    fname, xlabel = SCALING.get(name, ("bench_" + slug(name) + ".png", "count"))
    xs = [r["x"] for r in rows]
    unit = rows[0]["unit"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.errorbar(xs, [r["t4acuda"] for r in rows], yerr=err(rows, "t4acuda"),
                marker="o", capsize=3, label="t4acuda")
    has_raw = any(r["raw"] > 0 for r in rows) and not rows[0]["target"].endswith(" us")
    if has_raw:
        ax.errorbar(xs, [r["raw"] for r in rows], yerr=err(rows, "raw"),
                    marker="s", capsize=3, label="raw driver call")
    if max(xs) / max(min(x for x in xs if x > 0) if any(x > 0 for x in xs) else 1, 1) >= 100:
        ax.set_xscale("symlog", linthresh=1)
    ax.set_xticks(xs)
    ax.set_xticklabels([fmt_count(x) for x in xs])
    ax.set_xlabel(xlabel)
    ylabel = {"us": "µs per call", "M/s": "million launches / s",
              "GB/s": "GB/s"}.get(unit, unit)
    ax.set_ylabel(ylabel + " (median; bars: min..max)")
    ax.set_ylim(bottom=0)
    if has_raw:
        ax2 = ax.twinx()
        ax2.plot(xs, [r["ratio"] for r in rows], "k--", marker=".",
                 label="ratio t4acuda / raw")
        ax2.set_ylabel("ratio t4acuda / raw")
        lo = min(r["ratio"] for r in rows)
        hi = max(r["ratio"] for r in rows)
        ax2.set_ylim(min(0.8, lo - 0.05), max(1.2, hi + 0.05))
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="lower right", fontsize=8)
    else:
        ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"{name}\n{meta}", fontsize=9)
    fig.tight_layout()
    path = os.path.join(outdir, fname)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def fmt_count(x):
    x = int(x)
    for e in (6, 3):
        if x >= 10**e and x % 10**e == 0:
            m = x // 10**e
            return f"10^{e}" if m == 1 else f"{m}·10^{e}"
    return str(x)


def fmt_size(b):
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << k:
            return f"{b / (1 << k):g} {unit}"
    return f"{int(b)} B"


def plot_transfer_sweep(series, meta, outdir):
    """Ratio (t4acuda / raw, time-based: >= 1 means not slower than raw)
    against transfer size, one line per sweep series ("transfer sweep:
    upload pageable", ...). Rows are in us (lower is better; the ratio
    drawn is raw / t4acuda) or GB/s (higher is better; t4acuda / raw)."""
    sweep = {k: v for k, v in series.items() if k.startswith("transfer sweep")}
    if not sweep:
        return None
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    xs_all = set()
    for name, rows in sorted(sweep.items()):
        xs = [r["x"] for r in rows]
        xs_all.update(xs)
        if rows[0]["unit"] == "us":
            ys = [r["raw"] / r["t4acuda"] if r["t4acuda"] > 0 else 0
                  for r in rows]
        else:
            ys = [r["ratio"] for r in rows]
        ax.plot(xs, ys, marker="o", label=name.replace("transfer sweep: ", ""))
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    xs_sorted = sorted(xs_all)
    ax.set_xticks(xs_sorted)
    ax.set_xticklabels([fmt_size(x) for x in xs_sorted], rotation=45,
                       fontsize=7)
    ax.set_xlabel("transfer size")
    ax.set_ylabel("speed against the raw call (≥ 1: not slower)")
    ax.legend(fontsize=8)
    ax.set_title(f"transfer sweep\n{meta}", fontsize=9)
    fig.tight_layout()
    path = os.path.join(outdir, "bench_transfer_sweep.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    with open(argv[1]) as f:
        data = json.load(f)
    outdir = argv[2] if len(argv) > 2 else os.path.join("docs", "images")
    os.makedirs(outdir, exist_ok=True)
    drv = data.get("driver", 0)
    meta = (f"{data.get('device', '?')}, driver {drv // 1000}.{drv % 1000 // 10}, "
            f"{data.get('host_cores', '?')} cores, {data.get('runs', 1)} runs × "
            f"{data.get('reps', '?')} reps")
    series = series_rows(data.get("rows", []))
    written = []
    for name, rows in series.items():
        if name.startswith("transfer sweep"):
            continue
        written.append(plot_scaling(name, rows, meta, outdir))
    p = plot_transfer_sweep(series, meta, outdir)
    if p:
        written.append(p)
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
