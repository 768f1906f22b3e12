"""GPU tests of the Python package (run by scripts/gpu-lane phase python):
NumPy round trips, DLPack both ways with PyTorch and CuPy ordered by
streams only, the import deleter under 8 threads, read-only imports.
Skipped without a GPU; with T4A_REQUIRE_GPU set, a missing GPU (or a
missing peer library: torch, cupy) fails instead."""

import ctypes
import os
import threading

import numpy as np
import pytest

import t4acuda
from t4acuda import _ffi

REQUIRE = bool(os.environ.get("T4A_REQUIRE_GPU"))


def _gpu_reason():
    if "fake" in os.path.basename(os.environ.get("T4A_CUDA_DRIVER_PATH", "")):
        return "the fake libcuda is loaded"
    try:
        if t4acuda.device_count() < 1:
            return "no CUDA device"
    except t4acuda.Error as e:
        return f"no usable driver: {e}"
    return None


_reason = _gpu_reason()
if _reason:
    if REQUIRE:
        raise RuntimeError(f"T4A_REQUIRE_GPU is set but {_reason}")
    pytest.skip(_reason, allow_module_level=True)


def need(module):
    if REQUIRE:
        return __import__(module)
    return pytest.importorskip(module)


KERNELS = r"""
extern "C" __global__ void scale(float *y, float a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * y[i];
}
extern "C" __global__ void iota(float *y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (float)i;
}
extern "C" __global__ void spin_iota(float *y, unsigned n, long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (float)i;
}
"""
N = 1 << 20
SPIN = 20_000_000  # ~10 ms: a missing stream order shows as wrong data


@pytest.fixture(scope="module")
def rt():
    r = t4acuda.Runtime()
    yield r
    r.close()


@pytest.fixture(scope="module")
def mod(rt):
    art = t4acuda.compile(KERNELS, runtime=rt)
    m = rt.load(art)
    yield m
    m.close()
    art.close()


def test_numpy_round_trips(rt):
    for dt in (np.uint8, np.int32, np.float32, np.float64, np.complex64):
        a = (np.arange(12345) * 7 % 251).astype(dt)
        b = rt.upload(a)
        assert np.array_equal(b.download(), a)
        b.close()
    hb = rt.host_alloc(N * 4)
    hb.array(np.float32)[:] = np.arange(N, dtype=np.float32)
    d = rt.alloc(N * 4)
    d.upload_host(hb)
    hb.array(np.float32)[:] = 0
    d.download_host(hb)
    rt.synchronize()
    assert np.array_equal(hb.array(np.float32), np.arange(N, dtype=np.float32))


def test_launch_typed_and_size_checked(rt, mod):
    k = mod.kernel("scale")
    assert k.param_sizes == (8, 4, 4)
    y = rt.upload(np.ones(N, np.float32))
    with pytest.raises(t4acuda.InvalidArgument, match="argument 1: 8 bytes"):
        k.launch(N // 256, 256, y, t4acuda.f64(2.0), t4acuda.u32(N))
    with pytest.raises(TypeError):
        k.launch(N // 256, 256, y, 2.0, t4acuda.u32(N))
    k.launch(N // 256, 256, y, t4acuda.f32(2.0), np.uint32(N))
    p = k.prepare(N // 256, 256, "buffer", "f32", "u32")
    p(y, 3.0, N)
    assert np.array_equal(y.download(), np.full(N, 6.0, np.float32))


def test_torch_both_ways_stream_ordered(rt, mod):
    torch = need("torch")
    spin = mod.kernel("spin_iota")
    # t4acuda writes (slowly), torch reads: torch.from_dlpack(buf) on
    # torch's current stream, ordered by the event the export enqueues.
    buf = rt.alloc(N * 4, dtype=np.float32, shape=(N,))
    spin.launch(N // 256, 256, buf, t4acuda.u32(N), t4acuda.i64(SPIN))
    t = torch.from_dlpack(buf)
    assert t.is_cuda and t.dtype == torch.float32 and t.shape == (N,)
    s = (t * 2).sum()  # on torch's stream, after the event
    assert s.item() == float(N * (N - 1))
    # torch writes, t4acuda reads: from_dlpack asks torch to order its
    # stream before the runtime's stream.
    src = torch.empty(N, device="cuda", dtype=torch.float32)
    torch.cuda._sleep(SPIN)
    src.copy_(torch.arange(N, device="cuda", dtype=torch.float32))
    b = t4acuda.from_dlpack(src, runtime=rt)
    mod.kernel("scale").launch(N // 256, 256, b, t4acuda.f32(0.5), t4acuda.u32(N))
    got = b.download()
    assert np.array_equal(got, np.arange(N, dtype=np.float32) * 0.5)
    torch.cuda.synchronize()
    assert torch.equal(src.cpu(), torch.arange(N, dtype=torch.float32) * 0.5)
    b.close()
    del t, src


def test_cupy_both_ways_stream_ordered(rt, mod):
    cp = need("cupy")
    spin = mod.kernel("spin_iota")
    buf = rt.alloc(N * 4, dtype=np.float32, shape=(N,))
    spin.launch(N // 256, 256, buf, t4acuda.u32(N), t4acuda.i64(SPIN))
    a = cp.from_dlpack(buf)
    assert float((a * 2).sum()) == float(N * (N - 1))
    # __cuda_array_interface__ (v3, with the runtime's stream)
    spin.launch(N // 256, 256, buf, t4acuda.u32(N), t4acuda.i64(SPIN))
    c = cp.asarray(buf)
    assert int(c[N - 1]) == N - 1 and float(c.sum()) == float(N * (N - 1) // 2)
    src = cp.arange(N, dtype=cp.float32)
    b = t4acuda.from_dlpack(src, runtime=rt)
    mod.kernel("scale").launch(N // 256, 256, b, t4acuda.f32(4.0), t4acuda.u32(N))
    assert np.array_equal(b.download(), np.arange(N, dtype=np.float32) * 4)
    b.close()


class _Producer:
    def __init__(self, ptr, n, counter, lock, readonly=False):
        self._shape = (ctypes.c_int64 * 1)(n)

        @ctypes.CFUNCTYPE(None, ctypes.POINTER(_ffi.DLManagedTensorVersioned))
        def deleter(_t):
            with lock:
                counter[0] += 1
        self._deleter = deleter
        t = _ffi.DLManagedTensorVersioned()
        t.version.major = 1
        t.deleter = deleter
        t.flags = _ffi.DLPACK_FLAG_BITMASK_READ_ONLY if readonly else 0
        t.dl_tensor.data = ptr
        t.dl_tensor.device = _ffi.DLDevice(_ffi.kDLCUDA, 0)
        t.dl_tensor.ndim = 1
        t.dl_tensor.dtype = _ffi.DLDataType(_ffi.kDLFloat, 32, 1)
        t.dl_tensor.shape = self._shape
        self._t = t

    def __dlpack_device__(self):
        return (_ffi.kDLCUDA, 0)

    def __dlpack__(self, stream=None, max_version=None, **_):
        from t4acuda._dlpack import _New
        return _New(ctypes.addressof(self._t), b"dltensor_versioned", None)


def test_import_deleter_exactly_once_under_8_threads(rt):
    backing = rt.upload(np.arange(1024, dtype=np.float32))
    counter, lock = [0], threading.Lock()
    per_thread = 200
    producers = [[_Producer(backing.device_pointer, 1024, counter, lock)
                  for _ in range(per_thread)] for _ in range(8)]
    errors = []

    def work(ps):
        try:
            for p in ps:
                b = t4acuda.from_dlpack(p, runtime=rt)
                assert b.nbytes == 4096
                b.close()
        except Exception as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(ps,)) for ps in producers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rt.synchronize()
    assert counter[0] == 8 * per_thread
    backing.close()


def test_read_only_import_rejects_writes(rt):
    backing = rt.upload(np.arange(64, dtype=np.float32))
    counter, lock = [0], threading.Lock()
    # The producer owns the tensor struct and its deleter: it must outlive
    # the import (a real producer's tensor lives until its deleter runs).
    producer = _Producer(backing.device_pointer, 64, counter, lock, readonly=True)
    b = t4acuda.from_dlpack(producer, runtime=rt)
    assert b.readonly
    for write in (lambda: b.fill(0), lambda: b.upload(np.zeros(64, np.float32)),
                  lambda: b.copy_from(backing)):
        with pytest.raises(t4acuda.InvalidArgument, match="read-only"):
            write()
    other = rt.alloc(256)
    other.copy_from(b)
    assert np.array_equal(other.download(np.float32), np.arange(64, dtype=np.float32))
    b.close()
    rt.synchronize()
    assert counter[0] == 1
    del producer  # only now: the library called its deleter
    backing.close()
    other.close()


def test_docs_saxpy(run_docs_example, capsys):
    """docs/python.md 'A first program: saxpy', run as written: it checks
    its result against NumPy itself (an assert)."""
    ns = run_docs_example("python.md", "saxpy")
    assert ns["result"].shape == (1 << 20,)
    assert "saxpy ok:" in capsys.readouterr().out


def test_porting_example(capsys):
    """examples/porting.py (docs/porting.md): five recipes, each checked
    against NumPy, without -I for the toolkit headers."""
    import runpy
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..",
                        "examples", "porting.py")
    example = runpy.run_path(os.path.abspath(path), run_name="porting_example")
    assert example["main"]() == 0
    out = capsys.readouterr().out
    assert out.count(" ok  (") == 5 and "WRONG" not in out, out


CLUSTER_KERNEL = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Each block of a 2-block cluster publishes in[blockIdx.x] in its shared
// memory and reads its neighbour's (rank ^ 1) through distributed shared
// memory: out[b * blockDim.x + t] = in[b ^ 1] * 3 + t.
extern "C" __global__ void cluster_neighbour(const int *in, int *out, unsigned n) {
  __shared__ int value;
  cg::cluster_group cluster = cg::this_cluster();
  unsigned rank = cluster.block_rank();
  if (threadIdx.x == 0) value = in[blockIdx.x];
  cluster.sync();  // every block's value is written
  const int *peer = cluster.map_shared_rank(&value, rank ^ 1u);
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = *peer * 3 + (int)threadIdx.x;
  cluster.sync();  // no block exits while its neighbour may still read it
}
"""


def test_cluster_launch_neighbour_shared_memory(rt):
    major, minor = (t4acuda.device_info(rt.device)[k] for k in ("cc_major", "cc_minor"))
    if major < 9:
        pytest.skip(f"thread block clusters need compute capability 9.0; "
                    f"the device is {major}.{minor}")
    art = t4acuda.compile(CLUSTER_KERNEL, runtime=rt)  # the device's cc (9.0 on H100/H200)
    with rt.load(art) as m:
        k = m.kernel("cluster_neighbour")
        blocks, threads = 64, 128
        n = blocks * threads
        src = (np.arange(blocks, dtype=np.int32) * 7919 - 1000).astype(np.int32)
        d_in = rt.upload(src)
        d_out = rt.upload(np.full(n, -1, np.int32))
        occ = k.cluster_occupancy(blocks, threads, cluster=2)
        assert occ.max_active_clusters > 0 and occ.max_cluster_size >= 2
        # A cluster must divide the grid: refused before anything runs.
        with pytest.raises(t4acuda.InvalidArgument, match="not a multiple of 2"):
            k.launch(blocks - 1, threads, d_in, d_out, t4acuda.u32(n), cluster=2)
        k.launch(blocks, threads, d_in, d_out, t4acuda.u32(n), cluster=2)
        got = d_out.download()
        neighbour = src[np.arange(blocks) ^ 1]
        want = (neighbour[:, None] * 3 + np.arange(threads, dtype=np.int32)[None, :])
        assert got.dtype == np.int32 and np.array_equal(got, want.astype(np.int32).ravel())
        # The same with programmatic dependent launch and a prepared launch.
        d_out.fill(0xff)
        p = k.prepare(blocks, threads, "buffer", "buffer", "u32", cluster=(2, 1, 1),
                      programmatic=True)
        p(d_in, d_out, n)
        assert np.array_equal(d_out.download(), want.astype(np.int32).ravel())
        d_in.close()
        d_out.close()
        k.close()
    art.close()


# ---- foreign streams and the raw seam (issue 24: vendor libraries)

def _cupy_view(cp, buf, shape, dtype):
    """A CuPy array over a t4acuda buffer's memory (no copy, not owned):
    the Buffer must outlive it."""
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    mem = cp.cuda.UnownedMemory(buf.device_pointer, n, buf)
    return cp.ndarray(shape, dtype, cp.cuda.MemoryPointer(mem, 0))


def test_cublas_through_cupy_inside_a_raw_scope(rt, mod):
    """cuBLAS (CuPy's matmul) on the runtime's stream inside a raw scope:
    ordered after a slow t4acuda kernel that writes A, and before the
    download that reads C, with no host wait in between."""
    cp = need("cupy")
    m, k, n = 96, 64, 80
    a = rt.alloc(m * k * 4, dtype=np.float32, shape=(m, k))
    b = rt.upload((np.arange(k * n, dtype=np.float32) % 7 - 3).reshape(k, n))
    c = rt.alloc(m * n * 4, dtype=np.float32, shape=(m, n))
    c.fill(0xff)  # NaN until the gemm writes it
    mod.kernel("spin_iota").launch((m * k + 255) // 256, 256, a, t4acuda.u32(m * k),
                                   t4acuda.i64(SPIN))
    with rt.raw() as scope:
        with cp.cuda.ExternalStream(scope.stream):
            ca = _cupy_view(cp, a, (m, k), np.float32)
            cb = _cupy_view(cp, b, (k, n), np.float32)
            cc = _cupy_view(cp, c, (m, n), np.float32)
            cp.matmul(ca, cb, out=cc)  # cuBLAS gemm on the runtime's stream
            scope.buffer_pointer(a), scope.buffer_pointer(b), scope.buffer_pointer(c)
    want = np.arange(m * k, dtype=np.float64).reshape(m, k) @ \
        (np.arange(k * n, dtype=np.float64) % 7 - 3).reshape(k, n)
    got = c.download()  # on the runtime's stream, after the gemm
    assert np.allclose(got, want, rtol=1e-5), float(np.abs(got - want).max())
    for x in (a, b, c):
        x.close()


def test_torch_stream_ordered_before_the_runtime(rt, mod):
    """Runtime.wait_stream(torch.cuda.Stream): the runtime's kernel reads
    what torch wrote on its own stream behind a sleep."""
    torch = need("torch")
    s = torch.cuda.Stream()
    src = torch.zeros(N, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    b = t4acuda.from_dlpack(src, runtime=rt)  # no read yet
    with torch.cuda.stream(s):
        torch.cuda._sleep(SPIN)
        src.copy_(torch.arange(N, device="cuda", dtype=torch.float32))
    rt.wait_stream(s)  # the stream object itself
    mod.kernel("scale").launch(N // 256, 256, b, t4acuda.f32(0.5), t4acuda.u32(N))
    assert np.array_equal(b.download(), np.arange(N, dtype=np.float32) * 0.5)
    b.close()
    torch.cuda.synchronize()


def test_runtime_ordered_before_a_cupy_stream(rt, mod):
    """Runtime.signal_stream(cupy.cuda.Stream): CuPy's reduction on its own
    non-blocking stream sees what a slow t4acuda kernel wrote."""
    cp = need("cupy")
    buf = rt.alloc(N * 4, dtype=np.float32, shape=(N,))
    buf.fill(0)
    mod.kernel("spin_iota").launch(N // 256, 256, buf, t4acuda.u32(N), t4acuda.i64(SPIN))
    cs = cp.cuda.Stream(non_blocking=True)
    rt.signal_stream(cs)
    with cs:
        total = _cupy_view(cp, buf, (N,), np.float32).sum(dtype=cp.float64)
        got = float(total.get(stream=cs))
    assert got == float(N * (N - 1) // 2)
    rt.synchronize()
    buf.close()


def test_buffer_reuse_on_the_device(rt, mod):
    """A closed buffer comes back for the next allocation of its size, and
    the work the old owner enqueued runs before the new owner's."""
    old = rt.alloc(N * 4, dtype=np.float32, shape=(N,))
    before = rt.reuse_stats()  # `old` may itself be one an earlier test closed
    mod.kernel("spin_iota").launch(N // 256, 256, old, t4acuda.u32(N), t4acuda.i64(SPIN))
    old.close()  # its kernel is still spinning
    new = rt.alloc(N * 4, dtype=np.float32, shape=(N,))
    assert rt.reuse_stats()["hits"] == before["hits"] + 1
    new.fill(0)  # after the old owner's kernel, in stream order
    assert not new.download().any()
    new.close()


# ---- graphs and cooperative launches from Python

GRID_KERNELS = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" { __device__ unsigned arrived; }

// Phase 1 writes y[i] = i; a hand-written grid barrier (each block adds 1
// to `arrived` and waits for all); phase 2 reads the next block's values.
extern "C" __global__ void rotate_blocks(float *y, float *out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = (float)i;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(&arrived, 1u);
    while (atomicAdd(&arrived, 0u) < gridDim.x) {}
  }
  __syncthreads();
  out[i] = ((volatile float *)y)[(i + blockDim.x) % n];  // another SM wrote it
}

// The same with the toolkit's grid group (cooperative launch required).
extern "C" __global__ void rotate_grid_sync(float *y, float *out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = (float)i * 2.0f;
  cg::this_grid().sync();
  out[i] = y[(i + blockDim.x) % n];
}
"""


def test_cooperative_launches_with_a_declared_grid_barrier(rt):
    art = t4acuda.compile(GRID_KERNELS, runtime=rt)
    with rt.load(art) as m:
        k = m.kernel("rotate_blocks")
        k.declare_barrier("arrived", expected=1, per_block=True)
        threads = 128
        blocks = min(k.max_cooperative_blocks(threads), 64)
        n = blocks * threads
        y, out = rt.alloc(n * 4, dtype=np.float32), rt.alloc(n * 4, dtype=np.float32)
        want = np.roll(np.arange(n, dtype=np.float32), -threads)
        for _ in range(3):  # the counter is reset before every launch
            out.fill(0)
            k.launch(blocks, threads, y, out, t4acuda.u32(n), cooperative=True)
            assert np.array_equal(out.download(), want)
        rt.synchronize()
        audit = k.barrier_audit()
        assert audit["launches"] == 3 and audit["audited"] == 3 and audit["failures"] == 0
        g = m.kernel("rotate_grid_sync")
        gb = min(g.max_cooperative_blocks(threads), 64)
        gn = gb * threads
        g.launch(gb, threads, y, out, t4acuda.u32(gn), cooperative=True)
        assert np.array_equal(out.download()[:gn],
                              np.roll(np.arange(gn, dtype=np.float32) * 2, -threads))
        for o in (y, out, k, g):
            o.close()
    art.close()


def test_graph_capture_and_replay_on_the_device(rt, mod):
    y = rt.alloc(N * 4, dtype=np.float32, shape=(N,))
    host = rt.host_alloc(N * 4)
    with rt.capture() as cap:
        mod.kernel("iota").launch(N // 256, 256, y, t4acuda.u32(N))
        mod.kernel("scale").launch(N // 256, 256, y, t4acuda.f32(3.0), t4acuda.u32(N))
        y.download_host(host)
    g = cap.graph
    assert g.info()["node_count"] >= 3
    host.array(np.float32)[:] = -1
    rt.synchronize()
    assert (host.array(np.float32) == -1).all()  # the capture ran nothing
    for _ in range(2):
        rt.replay(g)
        rt.synchronize()
        assert np.array_equal(host.array(np.float32), np.arange(N, dtype=np.float32) * 3)
    y.close()  # the graph keeps it
    g.launch()
    rt.synchronize()
    assert np.array_equal(host.array(np.float32), np.arange(N, dtype=np.float32) * 3)
    g.close()
    host.close()
