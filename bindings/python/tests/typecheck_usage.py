"""A typical program using t4acuda, type-checked by ctest python_typecheck
(tests/typecheck.py: mypy, strict, must pass) and run on the fake driver
by test_host.py (test_typecheck_usage_runs). The annotated assignments
are the point: each says what the API returns, and mypy checks it.

saxpy: y = a * x + y on the device, with the pieces most programs use
(compile, load, launch, prepared launch, graph capture, cluster launch,
transfers, pinned memory, completions, a raw scope, DLPack, errors, reprs, a
stream priority)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import numpy.typing as npt

import t4acuda

SAXPY = r"""
template <typename T>
__global__ void axpy(T a, const T *x, T *y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


def saxpy(rt: t4acuda.Runtime, a: float, x: npt.NDArray[np.float32],
          y: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    art: t4acuda.Artifact = t4acuda.compile(
        SAXPY, options=["-std=c++17"], name_expressions=["axpy<float>"],
        program_name="saxpy.cu", cc=(8, 0))
    lowered: str = art.lowered_name_of("axpy<float>")
    assert lowered.startswith("_Z")
    with rt.load(art) as mod:
        k: t4acuda.Kernel = mod.kernel("axpy<float>")
        n = x.size
        dx: t4acuda.Buffer = rt.upload(x)
        dy: t4acuda.Buffer = rt.upload(y)
        block: int = 256
        grid = (n + block - 1) // block
        k.launch(grid, block, t4acuda.f32(a), dx, dy, t4acuda.u32(n))
        again: t4acuda.PreparedLaunch = k.prepare((grid,), (block, 1, 1), t4acuda.f32,
                                                  "buffer", "buffer", np.uint32)
        again(0.0, dx, dy, n)  # a = 0 leaves y as it is
        with rt.capture() as cap:  # a graph of one launch, replayed twice
            k.launch(grid, block, t4acuda.f32(0.0), dx, dy, t4acuda.u32(n))
        graph: t4acuda.Graph = cap.graph
        graph.launch()
        rt.replay(graph)
        replays: int = graph.info()["launches"]
        assert replays == 2
        graph.close()
        most: int = k.max_cooperative_blocks(block)
        if grid <= most:
            k.launch(grid, block, t4acuda.f32(0.0), dx, dy, t4acuda.u32(n), cooperative=True)
        if t4acuda.device_info(rt.device)["cc_major"] >= 9:  # clusters: Hopper and later
            occ: t4acuda.ClusterOccupancy = k.cluster_occupancy(grid, block, cluster=1)
            fits: int = occ.max_active_clusters
            largest: int = occ.max_cluster_size
            if fits > 0 and largest >= 1:
                k.launch(grid, block, t4acuda.f32(0.0), dx, dy, t4acuda.u32(n),
                         cluster=(1,), programmatic=True)
        out = dy.download()
        for b in (dx, dy, k):
            b.close()
    art.close()
    return out.astype(np.float32)


def tour(rt: t4acuda.Runtime) -> list[str]:
    """The rest of the surface, each result in a typed name."""
    shown: list[str] = [repr(rt)]
    buf = rt.empty((4, 8), dtype=np.float32, zero=True)
    nbytes: int = buf.nbytes
    shape: tuple[int, ...] = buf.shape
    dtype: np.dtype[np.generic] = buf.dtype
    assert nbytes == 128 and shape == (4, 8) and dtype == np.float32 and not buf.readonly
    raw = buf.view("uint8", shape=128)
    raw.fill(0, offset=0, nbytes=16)
    host: t4acuda.HostBuffer = rt.host_alloc(4096)
    view: npt.NDArray[np.generic] = host.array(np.uint32, (1024,))
    view[:] = 7
    raw.upload_host(host, nbytes=128)
    raw.download_host(host, nbytes=128)
    pending: t4acuda.Download = raw.download_async(nbytes=64)
    got: Optional[npt.NDArray[np.generic]] = pending.poll()
    data: npt.NDArray[np.generic] = got if got is not None else pending.wait()
    assert data.nbytes == 64
    done: t4acuda.Completion = rt.record()
    rt.wait(done)
    finished: bool = done.poll()
    assert finished or not finished
    with rt.raw() as scope:
        stream: int = scope.stream
        ptr: int = scope.buffer_pointer(buf)
        assert stream == rt.stream and ptr == buf.device_pointer
    cai = buf.__cuda_array_interface__
    assert cai["shape"] == (4, 8)
    imported: t4acuda.Buffer = rt.from_dlpack(buf)
    try:
        buf.view("uint8", shape=(1024,))  # 1024 bytes of a 128-byte buffer: refused
    except t4acuda.InvalidArgument as e:
        why: str = e.message
        status: Optional[int] = e.status
        assert "bytes" in why and status == t4acuda.InvalidArgument.status
    try:
        t4acuda.compile("__global__ void k() { nope(); }", cc=(8, 0))
    except t4acuda.Compile as failed:
        log: str = failed.log
        assert "nope" in log
    with t4acuda.Runtime(rt.device, stream_priority=-1) as urgent:  # runs first
        priority: int = urgent.stream_priority
        assert priority == -1 and rt.stream_priority == 0
    stats: dict[str, object] = rt.stats()
    assert "launches" in stats
    count: int = t4acuda.device_count()
    version: tuple[int, int, int] = t4acuda.version()
    assert count >= 1 and version >= (0, 1, 0)
    shown += [repr(o) for o in (buf, host, pending, done, imported)]
    for o in (imported, pending, done, host, raw, buf):
        o.close()
    shown.append(repr(buf))  # closed objects repr too
    return shown


def main() -> None:
    with t4acuda.Runtime() as rt:
        x = np.arange(1000, dtype=np.float32)
        y = np.ones(1000, dtype=np.float32)
        y2 = saxpy(rt, 2.0, x, y)
        assert y2.shape == (1000,)
        for line in tour(rt):
            print(line)


if __name__ == "__main__":
    main()
