#!/usr/bin/env python3
"""t4acuda from Python against its peers (CuPy, cuda.core, PyTorch), in
one process: kernel launch with 0 and 4 arguments, alloc + free of 1 MiB,
pageable and pinned transfers of 256 MiB each way. Each row is the median
of REPS repetitions; a peer that is not installed is left out (reported).
Writes bench_python.txt, bench_python.json and bench_python.png (matplotlib)
to $OUT (default: the current folder). Also times an empty ctypes call,
the floor that ctypes puts under every t4acuda call from Python.

  PYTHONPATH=bindings/python/src T4ACUDA_LIBRARY=build/src/libt4acuda.so \
    python3 bench/python/bench_peers.py [--reps 7] [--launches 2000]
"""

import argparse
import ctypes
import json
import os
import statistics
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--allocs", type=int, default=2000)
    ap.add_argument("--transfer-mib", type=int, default=256)
    args = ap.parse_args()
    out_dir = os.environ.get("OUT", ".")
    os.makedirs(out_dir, exist_ok=True)
    R, L, A = args.reps, args.launches, args.allocs
    nbytes = args.transfer_mib * MiB
    rows = {}  # (operation, library) -> value
    notes = []

    def row(op, lib, value):
        rows[(op, lib)] = value
        print(f"{op:<28} {lib:<22} {value:10.3f}", flush=True)

    # ---- ctypes floor
    lib = t4acuda._ffi.LIB
    fn = lib.t4a_version
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
        notes.append(f"CuPy not run: {e}")

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
    except Exception as e:  # an API that moved between versions: say so
        notes.append(f"cuda.core not run: {type(e).__name__}: {e}")

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
        notes.append("PyTorch has no raw kernel launch: no launch rows")
    except ImportError as e:
        notes.append(f"PyTorch not run: {e}")

    # ---- targets
    targets = []

    def target(name, ours, theirs):
        if ours in rows and theirs in rows:
            ok = rows[ours] <= rows[theirs]
            targets.append({"target": name, "t4acuda": rows[ours], "peer": rows[theirs],
                            "met": ok})
    target("launch 0 args <= CuPy RawKernel", ("launch 0 args (us)", "t4acuda prepared"),
           ("launch 0 args (us)", "CuPy RawKernel"))
    target("launch 4 args <= CuPy RawKernel", ("launch 4 args (us)", "t4acuda prepared"),
           ("launch 4 args (us)", "CuPy RawKernel"))
    target("launch 4 args (launch()) <= CuPy", ("launch 4 args (us)", "t4acuda launch()"),
           ("launch 4 args (us)", "CuPy RawKernel"))
    target("alloc+free <= CuPy pool", ("alloc+free 1 MiB (us)", "t4acuda"),
           ("alloc+free 1 MiB (us)", "CuPy pool"))

    # ---- outputs
    info = t4acuda.device_info(0)
    ops = sorted({op for op, _ in rows}, key=lambda o: list(dict.fromkeys(
        op for op, _ in rows)).index(o))
    lines = [f"t4acuda {t4acuda.version_string()} from Python on {info['name']} "
             f"(median of {R}; launches x{L}, allocs x{A}, transfers {args.transfer_mib} MiB)",
             f"{'operation':<28} {'library':<22} {'value':>10}"]
    for op in ops:
        for (o, libname), v in rows.items():
            if o == op:
                lines.append(f"{o:<28} {libname:<22} {v:10.3f}")
    lines.append("targets:")
    for t in targets:
        lines.append(f"  {t['target']:<36} {t['t4acuda']:.3f} vs {t['peer']:.3f}: "
                     f"{'met' if t['met'] else 'NOT met'}")
    lines += [f"note: {n}" for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(out_dir, "bench_python.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "bench_python.json"), "w") as f:
        json.dump({"device": info["name"], "reps": R, "rows": [
            {"operation": o, "library": lb, "value": v} for (o, lb), v in rows.items()],
            "targets": targets, "notes": notes}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(ops), figsize=(3.2 * len(ops), 4))
        for ax, op in zip(np.atleast_1d(axes), ops):
            items = [(lb, v) for (o, lb), v in rows.items() if o == op]
            ax.bar(range(len(items)), [v for _, v in items],
                   color=["tab:blue" if lb.startswith("t4acuda") else "tab:gray"
                          for lb, _ in items])
            ax.set_xticks(range(len(items)))
            ax.set_xticklabels([lb for lb, _ in items], rotation=60, ha="right", fontsize=7)
            ax.set_title(op, fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "bench_python.png"), dpi=110)
    except ImportError as e:
        print(f"no plot: {e}")
    for o in (dev, x, y, hb, k0, k4, mod, art):
        o.close()
    rt.close()
    return 0  # targets are read from the output, not enforced here


if __name__ == "__main__":
    raise SystemExit(main())
