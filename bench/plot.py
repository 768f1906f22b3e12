#!/usr/bin/env python3
"""Turns the benchmark's JSON (t4acuda-bench --json) into plots.

    python3 bench/plot.py bench.json [OUTDIR]      (OUTDIR: docs/images)

Writes one PNG per scaling series (rows with a "series" and an "x"):
cost (or rate) against count for t4acuda and the raw call, with the
ratio on a second axis. The transfer sweep's series ("transfer sweep: …")
are bench/plot_transfers.py's. Needs matplotlib.
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
            continue  # bench/plot_transfers.py draws these
        written.append(plot_scaling(name, rows, meta, outdir))
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
