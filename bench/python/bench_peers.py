#!/usr/bin/env python3
"""t4acuda from Python against its peers (CuPy, cuda.core, PyTorch), in
one process: kernel launch with 0 and 4 arguments (launch() and prepared),
alloc + free of 1 MiB, a compile answered by the in-memory cache, pageable
and pinned transfers of 256 MiB each way. A run measures every row as the
median of REPS repetitions; RUNS runs (default 3) give each row's median
and its [min..max]. A peer that is not installed is left out (reported).
The targets (TARGETS below; docs/python.md, "Performance") compare the
medians with the best peer's. Writes bench_python.txt, bench_python.json
(scripts/perf-table import-python renders docs/performance.md's Python
table from it) and bench_python.png (matplotlib) to $OUT (default: the
current folder). Also times an empty ctypes call, the floor that ctypes
puts under every t4acuda call from Python.

  PYTHONPATH=bindings/python/src T4ACUDA_LIBRARY=build/src/libt4acuda.so \
    python3 bench/python/bench_peers.py [--runs 3] [--reps 7] [--launches 2000]
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import t4acuda

SRC = r"""
extern "C" __global__ void empty0() {}
extern "C" __global__ void empty4(float *x, float *y, float a, unsigned n) {
  if (n == 0xffffffffu) y[0] = a * x[0];
}
"""
MiB = 1 << 20


def median_time(fn, reps, inner, sync):
    """Median seconds per call of fn over `reps` repetitions of `inner` calls."""
    fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / inner)
    return statistics.median(times)


def measure(args, row, notes):
    """One run: every row once (row(op, library, value))."""
    R, L, A = args.reps, args.launches, args.allocs
    nbytes = args.transfer_mib * MiB

    # ---- ctypes floor
    fn = t4acuda._ffi.LIB.t4a_version
    row("empty ctypes call (us)", "ctypes", median_time(fn, R, 100000, lambda: None) * 1e6)

    # ---- t4acuda
    rt = t4acuda.Runtime()
    sync = rt.synchronize
    art = t4acuda.compile(SRC, runtime=rt)
    mod = rt.load(art)
    k0, k4 = mod.kernel("empty0"), mod.kernel("empty4")
    x, y = rt.alloc(64), rt.alloc(64)
    row("launch 0 args (us)", "t4acuda launch()",
        median_time(lambda: k0.launch(1, 32), R, L, sync) * 1e6)
    row("launch 4 args (us)", "t4acuda launch()",
        median_time(lambda: k4.launch(1, 32, x, y, t4acuda.f32(1.0), t4acuda.u32(1)),
                    R, L, sync) * 1e6)
    p0 = k0.prepare(1, 32)
    p4 = k4.prepare(1, 32, "buffer", "buffer", "f32", "u32")
    row("launch 0 args (us)", "t4acuda prepared", median_time(p0, R, L, sync) * 1e6)
    row("launch 4 args (us)", "t4acuda prepared",
        median_time(lambda: p4(x, y, 1.0, 1), R, L, sync) * 1e6)
    row("alloc+free 1 MiB (us)", "t4acuda",
        median_time(lambda: rt.alloc(MiB).close(), R, A, sync) * 1e6)
    with t4acuda.Runtime(reuse_bytes=0) as rt0:  # every allocation from the library
        row("alloc+free 1 MiB (us)", "t4acuda, no reuse",
            median_time(lambda: rt0.alloc(MiB).close(), R, A, rt0.synchronize) * 1e6)
    row("compile, memory hit (us)", "t4acuda compile()",
        median_time(lambda: t4acuda.compile(SRC, runtime=rt).close(), R, A // 4,
                    lambda: None) * 1e6)

    def compile_load_get():
        a = t4acuda.compile(SRC, runtime=rt)
        m = rt.load(a)
        m.kernel("empty0").close()
        m.close()
        a.close()
    row("compile, memory hit (us)", "t4acuda + load + kernel",
        median_time(compile_load_get, R, A // 4, lambda: None) * 1e6)
    host = np.ones(nbytes, np.uint8)
    back = np.empty_like(host)
    dev = rt.alloc(nbytes)
    gbs = lambda t: nbytes / t / 1e9  # noqa: E731
    row("pageable H2D (GB/s)", "t4acuda", gbs(median_time(lambda: dev.upload(host), R, 1, sync)))
    row("pageable D2H (GB/s)", "t4acuda",
        gbs(median_time(lambda: dev.download(out=back), R, 1, sync)))
    hb = rt.host_alloc(nbytes)
    row("pinned H2D (GB/s)", "t4acuda", gbs(median_time(lambda: dev.upload_host(hb), R, 1, sync)))
    row("pinned D2H (GB/s)", "t4acuda",
        gbs(median_time(lambda: dev.download_host(hb), R, 1, sync)))
    assert np.array_equal(back[:4096], host[:4096])
    for o in (dev, x, y, hb, k0, k4, mod, art):
        o.close()
    rt.close()

    # ---- CuPy
    try:
        import cupy as cp
        csync = cp.cuda.get_current_stream().synchronize
        m = cp.RawModule(code=SRC)
        c0, c4 = m.get_function("empty0"), m.get_function("empty4")
        cx, cy = cp.zeros(16, cp.float32), cp.zeros(16, cp.float32)
        row("launch 0 args (us)", "CuPy RawKernel",
            median_time(lambda: c0((1,), (32,), ()), R, L, csync) * 1e6)
        row("launch 4 args (us)", "CuPy RawKernel",
            median_time(lambda: c4((1,), (32,), (cx, cy, cp.float32(1.0), cp.uint32(1))),
                        R, L, csync) * 1e6)
        row("alloc+free 1 MiB (us)", "CuPy pool",
            median_time(lambda: cp.cuda.alloc(MiB), R, A, csync) * 1e6)
        # CuPy's compile cache is per process and memoized by source: a
        # new RawModule of the same code and its function.
        row("compile, memory hit (us)", "CuPy RawModule",
            median_time(lambda: cp.RawModule(code=SRC).get_function("empty0"), R, A // 4,
                        lambda: None) * 1e6)
        cd = cp.empty(nbytes, cp.uint8)
        row("pageable H2D (GB/s)", "CuPy", gbs(median_time(lambda: cd.set(host), R, 1, csync)))
        row("pageable D2H (GB/s)", "CuPy",
            gbs(median_time(lambda: cd.get(out=back), R, 1, csync)))
        import cupyx
        ph = cupyx.empty_pinned(nbytes, np.uint8)
        row("pinned H2D (GB/s)", "CuPy", gbs(median_time(lambda: cd.set(ph), R, 1, csync)))
        row("pinned D2H (GB/s)", "CuPy", gbs(median_time(lambda: cd.get(out=ph), R, 1, csync)))
        del cd
    except ImportError as e:
        notes.add(f"CuPy not run: {e}")

    # ---- cuda.core
    try:
        try:
            from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
        except ImportError:
            from cuda.core.experimental import (Device, LaunchConfig, Program,
                                                ProgramOptions, launch)
        d = Device()
        d.set_current()
        s = d.create_stream()
        arch = "".join(str(v) for v in d.compute_capability)
        prog = Program(SRC, code_type="c++", options=ProgramOptions(arch=f"sm_{arch}"))
        cm = prog.compile("cubin")
        e0, e4 = cm.get_kernel("empty0"), cm.get_kernel("empty4")
        cfg = LaunchConfig(grid=1, block=32)
        row("launch 0 args (us)", "cuda.core",
            median_time(lambda: launch(s, cfg, e0), R, L, s.sync) * 1e6)
        bx, by = d.allocate(64, stream=s), d.allocate(64, stream=s)
        a32, n32 = np.float32(1.0), np.uint32(1)
        row("launch 4 args (us)", "cuda.core",
            median_time(lambda: launch(s, cfg, e4, bx, by, a32, n32), R, L, s.sync) * 1e6)
        row("alloc+free 1 MiB (us)", "cuda.core",
            median_time(lambda: d.allocate(MiB, stream=s).close(s), R, A, s.sync) * 1e6)
        notes.add("cuda.core has no compile cache: no compile row")
    except Exception as e:  # an API that moved between versions: say so
        notes.add(f"cuda.core not run: {type(e).__name__}: {e}")

    # ---- PyTorch
    try:
        import torch
        tsync = torch.cuda.synchronize
        row("alloc+free 1 MiB (us)", "PyTorch caching",
            median_time(lambda: torch.empty(MiB, dtype=torch.uint8, device="cuda"), R, A,
                        tsync) * 1e6)
        td = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        th = torch.from_numpy(host)
        tb = torch.from_numpy(back)
        row("pageable H2D (GB/s)", "PyTorch", gbs(median_time(lambda: td.copy_(th), R, 1, tsync)))
        row("pageable D2H (GB/s)", "PyTorch", gbs(median_time(lambda: tb.copy_(td), R, 1, tsync)))
        tp = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        row("pinned H2D (GB/s)", "PyTorch",
            gbs(median_time(lambda: td.copy_(tp, non_blocking=True), R, 1, tsync)))
        row("pinned D2H (GB/s)", "PyTorch",
            gbs(median_time(lambda: tp.copy_(td, non_blocking=True), R, 1, tsync)))
        del td, tp
        notes.add("PyTorch has no raw kernel launch: no launch rows")
    except ImportError as e:
        notes.add(f"PyTorch not run: {e}")


# The targets of issue 24 (docs/python.md, "Performance"): t4acuda's row
# against the best peer's, lower is better for times, higher for rates.
TARGETS = [
    ("launch 0 args (us)", "t4acuda launch()", ["CuPy RawKernel"]),
    ("launch 4 args (us)", "t4acuda launch()", ["CuPy RawKernel"]),
    ("launch 0 args (us)", "t4acuda prepared", ["cuda.core"]),
    ("launch 4 args (us)", "t4acuda prepared", ["cuda.core"]),
    ("alloc+free 1 MiB (us)", "t4acuda", ["CuPy pool"]),
    ("compile, memory hit (us)", "t4acuda + load + kernel", ["CuPy RawModule"]),
    ("pageable H2D (GB/s)", "t4acuda", ["CuPy", "PyTorch"]),
    ("pageable D2H (GB/s)", "t4acuda", ["CuPy", "PyTorch"]),
    ("pinned H2D (GB/s)", "t4acuda", ["CuPy", "PyTorch"]),
    ("pinned D2H (GB/s)", "t4acuda", ["CuPy", "PyTorch"]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3,
                    help="whole runs; each row is the median of the runs' values "
                         "(min and max shown)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--allocs", type=int, default=2000)
    ap.add_argument("--transfer-mib", type=int, default=256)
    args = ap.parse_args()
    if args.runs < 1 or args.reps < 1 or args.launches < 1 or args.allocs < 4:
        ap.error("--runs, --reps and --launches must be at least 1, --allocs at least 4")
    out_dir = os.environ.get("OUT", ".")
    os.makedirs(out_dir, exist_ok=True)
    R, L, A = args.reps, args.launches, args.allocs
    samples = {}  # (operation, library) -> one value per run
    notes = set()
    for run in range(args.runs):
        def row(op, lib, value):
            samples.setdefault((op, lib), []).append(value)
            print(f"run {run + 1}: {op:<28} {lib:<26} {value:10.3f}", flush=True)
        measure(args, row, notes)
    rows = {k: statistics.median(v) for k, v in samples.items()}

    # ---- targets
    targets = []
    for op, ours, peers in TARGETS:
        have = [p for p in peers if (op, p) in rows]
        if (op, ours) not in rows or not have:
            continue
        rate = "GB/s" in op
        best = (max if rate else min)(have, key=lambda p: rows[(op, p)])
        ok = rows[(op, ours)] >= rows[(op, best)] if rate else \
            rows[(op, ours)] <= rows[(op, best)]
        targets.append({"target": f"{op}: {ours} {'>=' if rate else '<='} {best}",
                        "t4acuda": rows[(op, ours)], "peer": rows[(op, best)], "met": ok})

    # ---- outputs
    info = t4acuda.device_info(0)
    ops = sorted({op for op, _ in rows}, key=lambda o: list(dict.fromkeys(
        op for op, _ in rows)).index(o))
    lines = [f"t4acuda {t4acuda.version_string()} from Python {sys.version.split()[0]} on "
             f"{info['name']}: {args.runs} runs, each the median of {R} repetitions "
             f"(launches x{L}, allocs x{A}, transfers {args.transfer_mib} MiB); value = "
             f"median of the runs [min..max]",
             f"{'operation':<28} {'library':<26} {'value':>10}  [min..max]"]
    for op in ops:
        for (o, libname), v in rows.items():
            if o == op:
                vs = samples[(o, libname)]
                lines.append(f"{o:<28} {libname:<26} {v:10.3f}  [{min(vs):.3f}..{max(vs):.3f}]")
    lines.append("targets:")
    for t in targets:
        lines.append(f"  {t['target']:<62} {t['t4acuda']:.3f} vs {t['peer']:.3f}: "
                     f"{'met' if t['met'] else 'NOT met'}")
    notes = sorted(notes)
    lines += [f"note: {n}" for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(out_dir, "bench_python.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "bench_python.json"), "w") as f:
        json.dump({"device": info["name"], "driver": t4acuda.driver_version(),
                   "python": sys.version.split()[0], "runs": args.runs, "reps": R,
                   "launches": L, "allocs": A, "transfer_mib": args.transfer_mib,
                   "rows": [{"operation": o, "library": lb, "value": v,
                             "min": min(samples[(o, lb)]), "max": max(samples[(o, lb)])}
                            for (o, lb), v in rows.items()],
                   "targets": targets, "notes": notes}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(ops), figsize=(3.2 * len(ops), 4))
        for ax, op in zip(np.atleast_1d(axes), ops):
            items = [(lb, v) for (o, lb), v in rows.items() if o == op]
            ax.bar(range(len(items)), [v for _, v in items],
                   yerr=[[v - min(samples[(op, lb)]) for lb, v in items],
                         [max(samples[(op, lb)]) - v for lb, v in items]],
                   color=["tab:blue" if lb.startswith("t4acuda") else "tab:gray"
                          for lb, _ in items])
            ax.set_xticks(range(len(items)))
            ax.set_xticklabels([lb for lb, _ in items], rotation=60, ha="right", fontsize=7)
            ax.set_title(op, fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "bench_python.png"), dpi=110)
    except ImportError as e:
        print(f"no plot: {e}")
    return 0  # targets are read from the output, not enforced here


if __name__ == "__main__":
    raise SystemExit(main())
