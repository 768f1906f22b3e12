"""Host tests of the Python package (ctest label bindings): no GPU; the
fake libcuda (T4A_CUDA_DRIVER_PATH) stands in for the driver, NVRTC is
the real one."""

import ctypes
import gc
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import t4acuda
from t4acuda import _dlpack, _ffi

try:  # the property tests need Hypothesis (PyPI); scripts/test installs it
    from hypothesis import event, given, settings, strategies as st
except ImportError:
    given = None

FAKE = os.environ.get("T4A_CUDA_DRIVER_PATH", "")
needs_fake = pytest.mark.skipif(
    "fake" not in os.path.basename(FAKE),
    reason="needs the fake libcuda in T4A_CUDA_DRIVER_PATH (ctest sets it)")
needs_dlpack = pytest.mark.skipif(
    "t4a_buffer_from_dlpack" not in _ffi.DECLARED,
    reason="the library under test exports no DLPack functions")


def run_py(code, **env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True,
                          text=True, timeout=120)


# ---- import, versions, exceptions

def test_version_matches_constants():
    c = t4acuda.CONSTANTS
    assert t4acuda.version() == (c["T4A_VERSION_MAJOR"], c["T4A_VERSION_MINOR"],
                                 c["T4A_VERSION_PATCH"])
    assert t4acuda.version_string() == c["T4A_VERSION_STRING"]
    assert t4acuda.built_cuda_version() > 0


def test_one_exception_class_per_status(source_dir):
    layouts = json.loads((source_dir / "abi" / "layouts.json").read_text())
    statuses = next(e for e in layouts["enums"] if e["name"] == "t4a_status_code")
    for v in statuses["values"]:
        if v["value"] == 0:
            continue
        name = "".join(p.capitalize() for p in
                       re.sub(r"^T4A_(ERROR_)?", "", v["name"]).split("_"))
        cls = getattr(t4acuda, name)
        assert issubclass(cls, t4acuda.Error)
        assert cls.status == v["value"]
        assert t4acuda.status_name(v["value"]) == v["name"]
    assert t4acuda.NoDriver and t4acuda.InvalidArgument and t4acuda.InvalidHandle


def test_no_driver_raises_nodriver_with_message():
    r = run_py(
        "import t4acuda\n"
        "try:\n"
        "    t4acuda.Runtime()\n"
        "except t4acuda.NoDriver as e:\n"
        "    print('STATUS', e.status, e.status_name)\n"
        "    print('ENTRY', e.entry_point)\n"
        "    print('MESSAGE', e.message)\n"
        "else:\n"
        "    print('NO ERROR')\n",
        T4A_CUDA_DRIVER_PATH="/nonexistent/libcuda.so.1")
    assert r.returncode == 0, r.stderr
    assert f"STATUS {t4acuda.NoDriver.status} T4A_ERROR_NO_DRIVER" in r.stdout
    assert "ENTRY t4a_runtime_create" in r.stdout
    msg = re.search(r"MESSAGE (.*)", r.stdout).group(1)
    assert "/nonexistent/libcuda.so.1" in msg, msg


def test_library_override_that_does_not_load_is_named():
    r = run_py("import t4acuda", T4ACUDA_LIBRARY="/nonexistent/libt4acuda.so.0")
    assert r.returncode != 0
    assert "T4ACUDA_LIBRARY='/nonexistent/libt4acuda.so.0'" in r.stderr


def test_forged_handles_raise_invalidhandle():
    forged = t4acuda._core._handle("t4a_buffer", 0x123456789)
    b = t4acuda.Buffer(None, forged, 16)
    with pytest.raises(t4acuda.InvalidHandle) as e:
        b.info()
    assert e.value.entry_point == "t4a_buffer_info_get"
    assert e.value.message
    c = t4acuda.Completion(t4acuda._core._handle("t4a_completion", 0xdead0001))
    with pytest.raises(t4acuda.InvalidHandle):
        c.poll()
    with pytest.raises(t4acuda.InvalidHandle):
        c.close()
    with pytest.raises(t4acuda.InvalidHandle):
        b.close()


# ---- layouts

def test_bundled_layouts_identical_to_abi(source_dir):
    bundled = source_dir / "bindings/python/src/t4acuda/_layouts.json"
    assert bundled.read_bytes() == (source_dir / "abi/layouts.json").read_bytes(), (
        "bindings/python/src/t4acuda/_layouts.json differs from abi/layouts.json: "
        "copy it (cp abi/layouts.json bindings/python/src/t4acuda/_layouts.json)")


def test_struct_layouts_match_abi(source_dir):
    layouts = json.loads((source_dir / "abi" / "layouts.json").read_text())
    for s in layouts["structs"]:
        cls = _ffi.STRUCTS[s["name"]]
        _ffi.check_struct(cls, s)
        inst = _ffi.new(s["name"])
        for f in s["fields"]:
            if f["name"] == "struct_size":
                assert inst.struct_size == f["init"] == s["size"]
    for c in layouts["constants"]:
        assert t4acuda.CONSTANTS[c["name"]] == c["value"]


def test_layout_check_fails_on_a_changed_layout():
    layouts = json.loads(json.dumps(_ffi.LAYOUTS))
    s = next(x for x in layouts["structs"] if x["name"] == "t4a_launch_desc")
    s["fields"][2]["offset"] += 8
    with pytest.raises(_ffi.LayoutError, match="t4a_launch_desc.kernel"):
        _ffi.check_struct(_ffi.STRUCTS["t4a_launch_desc"], s)
    s = json.loads(json.dumps(next(x for x in _ffi.LAYOUTS["structs"]
                                   if x["name"] == "t4a_runtime_options")))
    s["size"] += 8
    with pytest.raises(_ffi.LayoutError, match="t4a_runtime_options"):
        _ffi.check_struct(_ffi.STRUCTS["t4a_runtime_options"], s)


def test_dlpack_desc_matches_abi_when_listed(source_dir):
    layouts = json.loads((source_dir / "abi" / "layouts.json").read_text())
    s = next((x for x in layouts["structs"] if x["name"] == "t4a_dlpack_desc"), None)
    if s is None:
        # Before the DLPack header is in the layouts: the hand declaration.
        assert ctypes.sizeof(_ffi.STRUCTS["t4a_dlpack_desc"]) == 40
        return
    _ffi.check_struct(_ffi.STRUCTS["t4a_dlpack_desc"], s)


def test_dlpack_structs_have_the_published_layout():
    assert ctypes.sizeof(_ffi.DLTensor) == 48
    assert _ffi.DLManagedTensorVersioned.dl_tensor.offset == 32
    assert ctypes.sizeof(_ffi.DLManagedTensorVersioned) == 80
    assert ctypes.sizeof(_ffi.DLManagedTensor) == 64


# ---- every export wrapped

def exported_functions(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    return sorted({line.split()[-1].split("@")[0] for line in out.splitlines()
                   if re.search(r" T t4a_", line)})


def unwrapped(exports, package_dir):
    """Exports with no declaration or no use in the package's Python code."""
    text = ""
    for name in os.listdir(package_dir):
        if name.endswith(".py") and name != "_ffi.py":
            with open(os.path.join(package_dir, name), encoding="utf-8") as f:
                text += f.read()
    missing = []
    for e in exports:
        if e not in _ffi.FUNCTIONS or not re.search(r"\b" + e + r"\b", text):
            missing.append(e)
    return missing


def test_every_export_wrapped():
    exports = exported_functions(t4acuda.LIBRARY_PATH)
    assert "t4a_launch" in exports
    # Test builds export a test-only seam (t4a_testing_*): not public API.
    public = [e for e in exports if not e.startswith("t4a_testing_")]
    # The header's experimental section is wrapped too (graphs,
    # cooperative launches, grid barriers, launch attributes).
    with open(os.path.join(os.path.dirname(t4acuda.__file__),
                           "_layouts.json"), encoding="utf-8") as f:
        experimental = {fn["name"] for fn in json.load(f)["functions"]
                        if fn.get("experimental")}
    assert {"t4a_capture_begin", "t4a_kernel_declare_barrier"} <= experimental
    assert experimental <= set(public)
    pkg = os.path.dirname(t4acuda.__file__)
    assert unwrapped(public, pkg) == []
    assert unwrapped(public + ["t4a_not_wrapped_anywhere"], pkg) == [
        "t4a_not_wrapped_anywhere"]
    # And every function the layouts list is exported by this library.
    for name, fn in _ffi.FUNCTIONS.items():
        if not fn.get("declared_here"):
            assert name in exports, name


# ---- compile (real NVRTC, no GPU)

SAXPY = r"""
template <typename T>
__global__ void axpy(T a, const T *x, T *y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void fill_f32(float *y, float v, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = v;
}
"""


def test_compile_without_gpu(tmp_path):
    art = t4acuda.compile(SAXPY, options=["-std=c++17"], cc=(8, 0),
                          name_expressions=["axpy<float>", "axpy<double>"],
                          cache_dir=tmp_path)
    info = art.info()
    assert info["cc_major"] == 8 and info["cc_minor"] == 0
    assert info["name_expression_count"] == 2
    assert art.image[:4] == b"\x7fELF"
    assert info["image_bytes"] == len(art.image)
    assert art.lowered_name(0).startswith("_Z") and "axpy" in art.lowered_name(0)
    assert art.lowered_name(0) != art.lowered_name(1)
    assert re.fullmatch(r"[0-9a-f]{64}", art.key)
    ptx = t4acuda.compile(SAXPY, output="ptx", cc=(8, 0), cache_dir=tmp_path)
    assert b".entry fill_f32" in ptx.image
    art.close()
    ptx.close()


def test_docs_compile_without_gpu(run_docs_example, capsys):
    """docs/python.md 'Compiling without a GPU', run as written (NVRTC only)."""
    ns = run_docs_example("python.md", "compile-without-gpu")
    assert ns["cubin"].closed and ns["ptx"].closed
    out = capsys.readouterr().out
    assert out.startswith("9 ") and "b'\\x7fELF'" in out, out


def test_toolkit_headers_and_origin(tmp_path):
    """cuda_fp16.h without options; where each artifact came from."""
    tk = t4acuda.toolkit_headers()
    assert tk["nvrtc"] and tk["include"], tk
    src = ('#include <cuda_fp16.h>\n'
           'extern "C" __global__ void h(__half *p) { p[0] = __hadd(p[0], p[1]); }\n')
    a = t4acuda.compile(src, cc=(9, 0), cache_dir=tmp_path)
    assert a.info()["origin"] == 1 and a.info()["nvrtc_ns"] > 0
    b = t4acuda.compile(src, cc=(9, 0), cache_dir=tmp_path)
    assert b.info()["origin"] == 2
    c = t4acuda.compile(src, cc=(9, 0), cache_dir=tmp_path, flags=1)  # no memory cache
    assert c.info()["origin"] == 3 and c.info()["nvrtc_ns"] == 0
    with pytest.raises(t4acuda.Compile):
        t4acuda.compile(src, cc=(9, 0), cache_dir=tmp_path, flags=4)
    for x in (a, b, c):
        x.close()


def test_compile_error_carries_the_log(tmp_path):
    with pytest.raises(t4acuda.Compile) as e:
        t4acuda.compile("__global__ void k() { undeclared_thing(); }", cc=(8, 0),
                        cache_dir=tmp_path)
    assert "undeclared_thing" in e.value.log
    assert e.value.entry_point == "t4a_compile"


# ---- on the fake driver

@pytest.fixture
def rt():
    with t4acuda.Runtime() as r:
        yield r


@needs_fake
def test_driver_lacks_fake():
    # The fake driver never has cuFuncGetParamInfo (CUDA 12.4).
    lacks = t4acuda.driver_lacks()
    assert any(line.startswith("cuFuncGetParamInfo (CUDA 12.4): ") for line in lacks)
    assert not any("cuStreamBeginCapture" in line for line in lacks)


@needs_fake
def test_numpy_round_trip_fake(rt):
    a = np.arange(1000, dtype=np.float32).reshape(10, 100)
    buf = rt.upload(a)
    assert buf.nbytes == a.nbytes and buf.shape == (10, 100)
    b = buf.download()
    assert b.dtype == np.float32 and b.shape == (10, 100)
    assert np.array_equal(a, b)
    assert np.array_equal(buf.download(np.uint8), a.view(np.uint8).ravel())
    buf.fill(0xab, offset=4, nbytes=4)
    assert buf.download(np.uint8)[4:8].tolist() == [0xab] * 4
    other = rt.alloc(a.nbytes, zero=True)
    assert not other.download(np.uint8).any()
    other.copy_from(buf)
    assert np.array_equal(other.download(np.float32, (10, 100)), buf.download())
    d = buf.download_async()
    assert d.nbytes == a.nbytes
    got = d.wait()
    assert bytes(got) == buf.download().tobytes()
    d.close()
    with pytest.raises(t4acuda.InvalidArgument):
        buf.upload(np.zeros(2000, np.float32))  # past the end
    buf.close()
    other.close()


@needs_fake
def test_launch_keeps_one_checked_plan_per_shape_and_thread(rt):
    import threading
    import weakref
    k = rt.load(t4acuda.compile(SAXPY, cc=(8, 0))).kernel("fill_f32")
    buf = rt.alloc(64)
    before = rt.stats()["launches"]
    k.launch(1, 16, buf, t4acuda.f32(1.5), t4acuda.u32(16))
    k.launch(1, 16, buf, t4acuda.f32(2.5), t4acuda.u32(8))  # same shape: reused
    assert len(k._plans) == 1
    k.launch(1, 16, buf, t4acuda.f32(1.5), np.uint32(16))  # another type: its own
    k.launch((1,), (16,), buf, t4acuda.f32(1.5), t4acuda.u32(16))
    assert len(k._plans) == 3
    assert rt.stats()["launches"] == before + 4
    # What the checks refuse is refused on a kept shape too (1.0 == 1 and
    # True == 1, but not the same types).
    with pytest.raises(t4acuda.InvalidArgument, match="grid must be"):
        k.launch(1.0, 16, buf, t4acuda.f32(1.5), t4acuda.u32(16))
    with pytest.raises(t4acuda.InvalidArgument, match="grid must be"):
        k.launch((1.0,), (16,), buf, t4acuda.f32(1.5), t4acuda.u32(16))
    with pytest.raises(t4acuda.InvalidArgument, match="block must be"):
        k.launch(1, True, buf, t4acuda.f32(1.5), t4acuda.u32(16))
    with pytest.raises(TypeError, match="plain Python float"):
        k.launch(1, 16, buf, 1.5, t4acuda.u32(16))
    with pytest.raises(t4acuda.InvalidArgument, match="shared is"):
        k.launch(1, 16, buf, t4acuda.f32(1.5), t4acuda.u32(16), shared=2**32)
    with pytest.raises(t4acuda.InvalidArgument, match="grid must be"):
        k.launch(2**32, 16, buf, t4acuda.f32(1.5), t4acuda.u32(16))
    assert rt.stats()["launches"] == before + 4
    # A list grid is not hashable: checked and launched, not kept.
    k.launch([1], [16], buf, t4acuda.f32(1.5), t4acuda.u32(16))
    assert len(k._plans) == 3
    # Another thread gets a plan of its own (a plan's argument storage is
    # written before each call).
    errors = []

    def other():
        try:
            k.launch(1, 16, buf, t4acuda.f32(3.5), t4acuda.u32(16))
        except Exception as e:  # reported below
            errors.append(e)
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert not errors and len(k._plans) == 4
    # A kept plan holds no buffer: one released after a launch is gone.
    tmp = rt.alloc(64)
    ref = weakref.ref(tmp)
    k.launch(1, 16, tmp, t4acuda.f32(1.5), t4acuda.u32(16))
    del tmp
    gc.collect()
    assert ref() is None
    # A closed buffer on a kept shape: the handle error, nothing launched.
    gone = rt.alloc(64)
    gone.close()
    n = rt.stats()["launches"]
    with pytest.raises(t4acuda.InvalidHandle):
        k.launch(1, 16, gone, t4acuda.f32(1.5), t4acuda.u32(16))
    p = k.prepare(1, 16, "buffer", t4acuda.f32, "u32")
    with pytest.raises(t4acuda.InvalidHandle):
        p(gone, 1.5, 16)
    assert rt.stats()["launches"] == n
    # A closed kernel: the binding's own error, not a stale handle's.
    k.close()
    assert not k._plans
    with pytest.raises(t4acuda.InvalidHandle, match="Kernel was closed"):
        k.launch(1, 16, buf, t4acuda.f32(1.5), t4acuda.u32(16))
    buf.close()


@needs_fake
def test_prepared_launch_stores_each_value_and_falls_back_to_the_checks(rt):
    import weakref
    fake = ctypes.CDLL(FAKE)
    fake.fake_cuda_last_param0.restype = ctypes.c_ulonglong
    k = rt.load(t4acuda.compile(SAXPY, cc=(8, 0))).kernel("fill_f32")
    a, b = rt.alloc(64), rt.alloc(64)
    p = k.prepare(1, 16, "buffer", "f32", "u32")

    def slots():
        s = p._args
        return s[0].buffer.id, p._vals[1].value, p._vals[2].value

    fake.fake_cuda_record_param0(1)
    try:
        for buf, x, n in ((a, 1.5, 16), (b, 2.5, 8), (a, np.float32(0.25), np.uint32(3))):
            p(buf, x, n)
            assert slots() == (buf._h.id, float(x), int(n))
            assert fake.fake_cuda_last_param0() == buf.device_pointer  # what the driver got
        p(b, t4acuda.f32(4.0), t4acuda.u32(5))  # ctypes scalars: through the checks
        assert slots() == (b._h.id, 4.0, 5)
        p.launch(a, 0.5, 1)
        assert slots() == (a._h.id, 0.5, 1)
        # launch()'s plan reads ctypes scalars directly; numpy ones too.
        k.launch(1, 16, b, t4acuda.f32(6.0), t4acuda.u32(7))
        k.launch(1, 16, a, np.float32(8.0), np.uint32(9))
        assert fake.fake_cuda_last_param0() == a.device_pointer
    finally:
        fake.fake_cuda_record_param0(0)
    n = rt.stats()["launches"]
    with pytest.raises(TypeError, match="takes 3 arguments, 2 given"):
        p(a, 1.0)
    with pytest.raises(TypeError, match="takes 3 arguments, 4 given"):
        p(a, 1.0, 1, 1)
    with pytest.raises(TypeError):
        p(a, "x", 1)
    with pytest.raises((TypeError, AttributeError)):
        p(1234, 1.0, 1)  # not a Buffer
    gone = rt.alloc(64)
    gone.close()
    with pytest.raises(t4acuda.InvalidHandle, match="Buffer was closed"):
        p(gone, 1.0, 1)
    assert rt.stats()["launches"] == n  # nothing refused was launched
    # Pointer slots take a DevicePointer or an int.
    q = k.prepare(1, 16, "pointer", "f32", "u32")
    fake.fake_cuda_record_param0(1)
    try:
        q(t4acuda.DevicePointer(a.device_pointer), 1.0, 1)
        assert fake.fake_cuda_last_param0() == a.device_pointer
        q(b.device_pointer, 1.0, 1)
        assert fake.fake_cuda_last_param0() == b.device_pointer
    finally:
        fake.fake_cuda_record_param0(0)
    # The launcher holds the argument array it writes into: it stays safe
    # to call after its PreparedLaunch is gone.
    fn = k.prepare(1, 16, "buffer", "f32", "u32").launch
    ref = weakref.ref(fn)
    gc.collect()
    fn(b, 1.0, 2)
    assert ref() is fn and rt.stats()["launches"] == n + 3
    k.prepare(1, 16)  # no arguments for a 3-parameter kernel: the fake cannot tell
    z = rt.load(t4acuda.compile('extern "C" __global__ void z() {}', cc=(8, 0))).kernel("z")
    z.prepare(1, 1)()
    with pytest.raises(TypeError, match="takes 0 arguments, 1 given"):
        z.prepare(1, 1)(a)
    assert isinstance(z.prepare(1, 1), t4acuda.PreparedLaunch)
    # launch()'s short path: a plan without arguments is one for all
    # threads; what the checks refuse never takes it (shared 0.0, False).
    import threading
    m = rt.stats()["launches"]
    z.launch(2, 32)
    t = threading.Thread(target=z.launch, args=(2, 32))
    t.start()
    t.join()
    assert len(z._plans) == 1 and len(z._fast_plans) == 1  # the thread found it
    for bad in (0.0, False):
        with pytest.raises(t4acuda.InvalidArgument, match="shared"):
            z.launch(2, 32, shared=bad)
    z.launch(2, 32, cooperative=True)  # its own plan, not the short path's
    assert rt.stats()["launches"] == m + 3
    assert rt.stats()["cooperative_launches"] >= 1
    for x in (a, b):
        x.close()


def fake_graphs_live():
    """Graphs plus executable graphs alive in the fake driver."""
    fn = ctypes.CDLL(FAKE).fake_cuda_graphs_live
    fn.restype = ctypes.c_int
    return fn()


@needs_fake
def test_capture_two_launches_and_replay(rt):
    k = rt.load(t4acuda.compile(SAXPY, cc=(8, 0))).kernel("fill_f32")
    buf = rt.alloc(64, zero=True)
    graphs = fake_graphs_live()
    before = rt.stats()
    with rt.capture() as cap:
        assert "capturing" in repr(cap)
        k.launch(1, 16, buf, t4acuda.f32(1.5), t4acuda.u32(16))
        k.launch(1, 16, buf, t4acuda.f32(2.5), t4acuda.u32(8))
        buf.fill(0xab, offset=0, nbytes=8)  # captured: runs only on replay
    g = cap.graph
    assert isinstance(g, t4acuda.Graph) and g.runtime is rt
    assert "ended" in repr(cap)
    assert repr(g) == "<t4acuda.Graph device=0 nodes=3>"
    info = g.info()
    assert info["node_count"] == 3 and info["launches"] == 0 and info["kept_objects"] > 0
    after = rt.stats()
    assert after["launches"] == before["launches"] + 2  # counted when captured
    assert fake_graphs_live() > graphs
    assert not buf.download(np.uint8).any()  # the capture ran nothing
    g.launch()
    rt.replay(g)
    assert buf.download(np.uint8)[:8].tolist() == [0xab] * 8
    assert g.info()["launches"] == 2
    assert rt.stats()["launches"] == after["launches"]  # replays are not launches
    # retain: another reference; closing one leaves the other usable.
    g2 = g.retain()
    g.close()
    assert g.closed and repr(g) == "<t4acuda.Graph device=0 closed>"
    with pytest.raises(t4acuda.InvalidHandle, match="Graph was closed"):
        g.launch()
    g2.launch()
    assert g2.info()["launches"] == 3
    g2.close()
    rt.synchronize()
    assert fake_graphs_live() == graphs  # released: destroyed after its replays
    # Another mode; a mode that does not exist is refused before any call.
    with rt.capture("relaxed") as cap2:
        buf.fill(0, offset=0, nbytes=8)
    with cap2.graph as g3:
        assert g3.info()["node_count"] == 1
    with pytest.raises(t4acuda.InvalidArgument, match="mode must be"):
        rt.capture("local")  # type: ignore[arg-type]
    with pytest.raises(t4acuda.Capturing, match="entered once"):
        with cap2:
            pass
    buf.close()


@needs_fake
def test_capture_ended_and_graph_discarded_on_exception(rt):
    k = rt.load(t4acuda.compile(SAXPY, cc=(8, 0))).kernel("fill_f32")
    buf = rt.alloc(64, zero=True)
    rt.synchronize()
    graphs = fake_graphs_live()
    # A refused operation (allocation) in the block: the capture ends, the
    # graph is released and the library's error propagates.
    with pytest.raises(t4acuda.Capturing, match="t4a_buffer_alloc"):
        with rt.capture() as cap:
            k.launch(1, 16, buf, t4acuda.f32(1.5), t4acuda.u32(16))
            rt.alloc(16)
    assert "failed" in repr(cap)
    with pytest.raises(t4acuda.Capturing, match="no graph: the capture is failed"):
        cap.graph
    # An exception of the caller's own: the same, and the runtime works.
    with pytest.raises(ValueError, match="mine"):
        with rt.capture() as cap:
            buf.fill(0xcd, offset=0, nbytes=4)
            raise ValueError("mine")
    rt.synchronize()  # refused while capturing: the capture is over
    assert not buf.download(np.uint8).any()  # the captured fill never ran
    assert fake_graphs_live() == graphs  # both graphs discarded
    other = rt.alloc(16)
    other.close()
    # Still usable for a capture afterwards.
    with rt.capture() as cap:
        buf.fill(1, offset=0, nbytes=4)
    cap.graph.launch()
    assert buf.download(np.uint8)[:4].tolist() == [1] * 4
    cap.graph.close()
    buf.close()


@needs_fake
def test_cooperative_launch_sets_the_flag(rt):
    k = rt.load(t4acuda.compile(SAXPY, cc=(8, 0))).kernel("fill_f32")
    buf = rt.alloc(64)
    args = (buf, t4acuda.f32(1.5), t4acuda.u32(16))
    coop = rt.stats()["cooperative_launches"]
    k.launch(1, 16, *args)
    k.launch(1, 16, *args, cooperative=True)  # its own plan: the flag is in the key
    k.launch(1, 16, *args, cooperative=True)
    assert len(k._plans) == 2
    assert rt.stats()["cooperative_launches"] == coop + 2
    k.launch(1, 16, *args)  # the plain plan stays plain
    assert rt.stats()["cooperative_launches"] == coop + 2
    # The fake device: 4 multiprocessors, 32 blocks of 16 threads each.
    most = k.max_cooperative_blocks(16)
    assert most == 128
    k.launch(most, 16, *args, cooperative=True)
    n = rt.stats()["launches"]
    with pytest.raises(t4acuda.InvalidArgument, match="co-resident"):
        k.launch(most + 1, 16, *args, cooperative=True)
    k.launch(most + 1, 16, *args)  # not cooperative: no limit
    p = k.prepare(most + 1, 16, "buffer", "f32", "u32", cooperative=True)
    assert p.cooperative
    with pytest.raises(t4acuda.InvalidArgument, match="co-resident"):
        p(buf, 1.5, 16)
    k.prepare(2, 16, "buffer", "f32", "u32", cooperative=True)(buf, 1.5, 16)
    assert rt.stats()["launches"] == n + 2
    assert rt.stats()["cooperative_launches"] == coop + 4
    buf.close()


BARRIER_KERNEL = r"""
extern "C" { __device__ unsigned grid_bar; __device__ unsigned other_bar;
             __device__ unsigned third_bar; }
extern "C" __global__ void phases(float *y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (float)i;
}
"""


@needs_fake
def test_grid_barrier_declared_reset_and_audited(rt):
    fake = ctypes.CDLL(FAKE)
    mod = rt.load(t4acuda.compile(BARRIER_KERNEL, cc=(8, 0), cache_dir=""))
    k = mod.kernel("phases")
    assert k.declare_barrier("grid_bar", expected=1, per_block=True) == 0
    assert k.declare_barrier("other_bar", reset=7, expected=7) == 1
    bar = mod.get_global("grid_bar")
    buf = rt.alloc(256)
    # The fake kernel writes 3 into grid_bar: 1 per block expected, 2
    # blocks, so 2 passes and 3 fails.
    fake.fake_cuda_kernel_writes(b"grid_bar", ctypes.c_ulonglong(3))
    try:
        k.launch(2, 32, buf, t4acuda.u32(64), cooperative=True)
        rt.synchronize()
    finally:
        fake.fake_cuda_kernel_writes(None, ctypes.c_ulonglong(0))
    a = k.barrier_audit(0)
    assert (a["launches"], a["audited"], a["pending"], a["failures"]) == (1, 1, 0, 1)
    assert (a["last_bad_value"], a["last_bad_expected"], a["last_bad_launch"]) == (3, 2, 1)
    w = k.barrier_audit(1)  # reset to 7 before the kernel, which left it there
    assert (w["launches"], w["failures"]) == (1, 0)
    assert rt.stats()["barrier_audit_failures"] >= 1
    fake.fake_cuda_kernel_writes(b"grid_bar", ctypes.c_ulonglong(2))
    try:
        k.launch(2, 32, buf, t4acuda.u32(64))  # 2 for 2 blocks: passes
        rt.synchronize()
    finally:
        fake.fake_cuda_kernel_writes(None, ctypes.c_ulonglong(0))
    a = k.barrier_audit()
    assert (a["launches"], a["audited"], a["failures"]) == (2, 2, 1)
    k.launch(1, 32, buf, t4acuda.u32(64))  # nothing writes it: the reset value stays
    rt.synchronize()
    assert bar.download(np.uint32)[0] == 0  # the reset reached the global
    bad = [
        (dict(global_name="no_such_global"), t4acuda.InvalidArgument, "no_such_global"),
        (dict(global_name="grid_bar"), t4acuda.InvalidArgument, "grid_bar"),  # twice
        (dict(global_name="third_bar", width=8), t4acuda.InvalidArgument, "4 bytes"),
        (dict(global_name="x", width=2), t4acuda.InvalidArgument, "4 or 8 bytes"),
        (dict(global_name="x", width=True), t4acuda.InvalidArgument, "4 or 8 bytes"),
        (dict(global_name="x", reset=2**32), t4acuda.InvalidArgument, "reset is"),
        (dict(global_name="x", expected=-1), t4acuda.InvalidArgument, "expected is"),
        (dict(global_name=""), TypeError, "global_name"),
        (dict(global_name=b"grid_bar"), TypeError, "global_name"),
    ]
    for kwargs, exc, text in bad:
        with pytest.raises(exc, match=text):
            k.declare_barrier(**kwargs)
    with pytest.raises(t4acuda.InvalidArgument):
        k.barrier_audit(5)
    with pytest.raises(t4acuda.InvalidArgument, match="index"):
        k.barrier_audit(-1)
    for o in (bar, buf, k, mod):
        o.close()


# ---- launch attributes (t4a_launch_ex) and stream priority on the fake driver

def fake_last_launch_ex():
    """(cuLaunchKernelEx launches so far, [numAttrs, cluster x, y, z (0 0 0:
    none), programmatic]) of the fake driver."""
    fn = ctypes.CDLL(FAKE).fake_cuda_last_launch_ex
    fn.restype = ctypes.c_ulong
    fn.argtypes = [ctypes.POINTER(ctypes.c_uint * 5)]
    out = (ctypes.c_uint * 5)()
    n = fn(ctypes.byref(out))
    return n, list(out)


def fake_set_cluster_dims(x, y, z, must):
    ctypes.CDLL(FAKE).fake_cuda_set_cluster_dims(x, y, z, must)


class _NoC:
    """Stands in for the library: any use fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"{name} was called: the check must come before C")


@needs_fake
def test_cluster_launch_goes_through_launch_ex_and_is_recorded(rt):
    k = rt.load(t4acuda.compile(SAXPY, cc=(9, 0))).kernel("fill_f32")
    buf = rt.alloc(64)
    args = (buf, t4acuda.f32(1.5), t4acuda.u32(16))
    ex, _ = fake_last_launch_ex()
    launches = rt.stats()["launches"]
    k.launch(4, 16, *args)  # no attribute: t4a_launch, not cuLaunchKernelEx
    assert fake_last_launch_ex()[0] == ex
    k.launch(4, 16, *args, cluster=2)
    assert fake_last_launch_ex() == (ex + 1, [1, 2, 1, 1, 0])
    k.launch(4, 16, *args, cluster=2)  # the same shape: its plan is reused
    assert len(k._plans) == 2
    assert fake_last_launch_ex() == (ex + 2, [1, 2, 1, 1, 0])
    k.launch((4, 2), 16, *args, cluster=(2, 2))
    assert fake_last_launch_ex() == (ex + 3, [1, 2, 2, 1, 0])
    k.launch((4, 2, 3), 16, *args, cluster=[2, 1, 3])  # a list: checked, not kept
    assert fake_last_launch_ex() == (ex + 4, [1, 2, 1, 3, 0])
    assert len(k._plans) == 3
    k.launch(4, 16, *args)  # the plain plan stays plain
    assert fake_last_launch_ex()[0] == ex + 4
    assert rt.stats()["launches"] == launches + 6
    # A prepared launch takes the same attributes.
    p = k.prepare(8, 16, "buffer", "f32", "u32", cluster=(4,))
    assert p.cluster == (4, 1, 1) and not p.programmatic and not p.non_portable_cluster
    p(buf, 2.5, 16)
    assert fake_last_launch_ex() == (ex + 5, [1, 4, 1, 1, 0])
    assert k.prepare(8, 16, "buffer", "f32", "u32").cluster is None
    # More than the portable 8 blocks: refused unless non_portable_cluster.
    with pytest.raises(t4acuda.InvalidArgument, match="portable maximum is 8"):
        k.launch(16, 16, *args, cluster=16)
    try:
        k.launch(16, 16, *args, cluster=16, non_portable_cluster=True)
        assert fake_last_launch_ex() == (ex + 6, [1, 16, 1, 1, 0])
        assert ctypes.CDLL(FAKE).fake_cuda_non_portable() == 1
    finally:  # the fake has one function state for all kernels: cleared
        fake_set_cluster_dims(0, 0, 0, 0)
    # Not combined with a cooperative launch by this version (the library's
    # refusal, as its status).
    with pytest.raises(t4acuda.InvalidArgument, match="T4A_LAUNCH_COOPERATIVE"):
        k.launch(4, 16, *args, cluster=2, cooperative=True)
    assert fake_last_launch_ex()[0] == ex + 6
    buf.close()


@needs_fake
def test_cluster_not_dividing_the_grid_refused_nothing_launched(rt):
    k = rt.load(t4acuda.compile(SAXPY, cc=(9, 0))).kernel("fill_f32")
    buf = rt.alloc(64)
    args = (buf, t4acuda.f32(1.5), t4acuda.u32(16))
    ex, _ = fake_last_launch_ex()
    launches = rt.stats()["launches"]
    with pytest.raises(t4acuda.InvalidArgument,
                       match=r"grid\[0\] \(x\) is 3, not a multiple of 2"):
        k.launch(3, 16, *args, cluster=2)
    with pytest.raises(t4acuda.InvalidArgument,
                       match=r"grid\[1\] \(y\) is 5, not a multiple of 2"):
        k.launch((2, 5), 16, *args, cluster=(1, 2))
    with pytest.raises(t4acuda.InvalidArgument, match="not a multiple"):
        k.prepare(3, 16, "buffer", "f32", "u32", cluster=2)(buf, 1.5, 16)
    with pytest.raises(t4acuda.InvalidArgument, match="not a multiple"):
        k.cluster_occupancy(3, 16, cluster=2)
    assert fake_last_launch_ex()[0] == ex
    assert rt.stats()["launches"] == launches
    buf.close()


@needs_fake
def test_bad_cluster_values_refused_before_c(rt, monkeypatch):
    from t4acuda import _core
    k = rt.load(t4acuda.compile(SAXPY, cc=(9, 0))).kernel("fill_f32")
    buf = rt.alloc(64)
    args = (buf, t4acuda.f32(1.5), t4acuda.u32(16))
    plans = len(k._plans)
    ex, _ = fake_last_launch_ex()
    bad_values = [(0, ValueError, "extent 0 is out of range"),
                  (-1, ValueError, "extent -1 is out of range"),
                  (2**32, ValueError, f"extent {2**32} is out of range"),
                  ((2, 2**32), ValueError, f"extent {2**32} is out of range"),
                  ((2, 0, 1), ValueError, "extent 0 is out of range"),
                  ((1, 1, 1, 1), ValueError, r"not \(1, 1, 1, 1\) \(4 extents\)"),
                  ((), ValueError, r"not \(\) \(0 extents\)"),
                  (1.5, TypeError, "not float 1.5"),
                  ((2, 1.0), TypeError, "not float 1.0"),
                  (True, TypeError, "not bool True"),
                  ("2", TypeError, "not str '2'"),
                  (np.uint32(2), TypeError, "not uint32 2")]
    with monkeypatch.context() as m:
        m.setattr(_core, "C", _NoC())  # a call into the library fails the test
        for value, exc, message in bad_values:
            with pytest.raises(exc, match=message):
                k.launch(4, 16, *args, cluster=value)
            with pytest.raises(exc, match=message):
                k.prepare(4, 16, "buffer", "f32", "u32", cluster=value)
            with pytest.raises(exc, match=message):
                k.cluster_occupancy(4, 16, cluster=value)
    assert len(k._plans) == plans
    assert fake_last_launch_ex()[0] == ex
    k.launch(4, 16, *args, cluster=2)  # and the kernel still launches
    assert fake_last_launch_ex()[0] == ex + 1
    buf.close()


@needs_fake
def test_programmatic_launch_recorded(rt):
    k = rt.load(t4acuda.compile(SAXPY, cc=(9, 0))).kernel("fill_f32")
    buf = rt.alloc(64)
    args = (buf, t4acuda.f32(1.5), t4acuda.u32(16))
    ex, _ = fake_last_launch_ex()
    k.launch(3, 16, *args, programmatic=True)
    assert fake_last_launch_ex() == (ex + 1, [1, 0, 0, 0, 1])
    k.launch(4, 16, *args, programmatic=True, cluster=2)
    assert fake_last_launch_ex() == (ex + 2, [2, 2, 1, 1, 1])
    k.launch(3, 16, *args, programmatic=False)  # False: no attribute, t4a_launch
    assert fake_last_launch_ex()[0] == ex + 2
    p = k.prepare(3, 16, "buffer", "f32", "u32", programmatic=True)
    assert p.programmatic and p.cluster is None
    p(buf, 1.0, 16)
    assert fake_last_launch_ex() == (ex + 3, [1, 0, 0, 0, 1])
    buf.close()


@needs_fake
def test_cluster_occupancy_fake(rt):
    k = rt.load(t4acuda.compile(SAXPY, cc=(9, 0))).kernel("fill_f32")
    # The fake device: 4 multiprocessors, 32 blocks of 16 threads each.
    occ = k.cluster_occupancy(4, 16, cluster=2)
    assert isinstance(occ, t4acuda.ClusterOccupancy)
    assert occ == (64, 8) and occ.max_active_clusters == 64 and occ.max_cluster_size == 8
    assert k.cluster_occupancy((4, 2), 16, shared=0, cluster=(2, 2)).max_active_clusters == 32
    assert k.cluster_occupancy(4, 16) == (128, 8)  # no cluster: single blocks
    try:
        assert k.cluster_occupancy(16, 16, cluster=16,
                                   non_portable_cluster=True).max_cluster_size == 16
    finally:  # the kernel's non-portable attribute, set by that call, cleared
        fake_set_cluster_dims(0, 0, 0, 0)
    with pytest.raises(t4acuda.InvalidArgument, match="there is no cluster"):
        k.cluster_occupancy(4, 16, non_portable_cluster=True)
    with pytest.raises(t4acuda.InvalidArgument, match="shared is"):
        k.cluster_occupancy(4, 16, shared=-1, cluster=2)


@needs_fake
def test_compiled_cluster_dims_need_no_attribute(rt):
    # The fake's functions get __cluster_dims__(2, 1, 1) (kept until the
    # end: the fake driver has one function state for all kernels).
    fake_set_cluster_dims(2, 1, 1, 0)
    try:
        compiled_cluster_dims(rt)
    finally:
        fake_set_cluster_dims(0, 0, 0, 0)


def compiled_cluster_dims(rt):
    src = SAXPY + "\n// cluster-dims test\n"
    k = rt.load(t4acuda.compile(src, cc=(9, 0))).kernel("fill_f32")
    buf = rt.alloc(64)
    args = (buf, t4acuda.f32(1.5), t4acuda.u32(16))
    ex, _ = fake_last_launch_ex()
    launches = rt.stats()["launches"]
    k.launch(4, 16, *args)  # t4a_launch, as compiled
    with pytest.raises(t4acuda.InvalidArgument, match="multiple"):
        k.launch(3, 16, *args)
    with pytest.raises(t4acuda.InvalidArgument, match=r"__cluster_dims__\(2, 1, 1\)"):
        k.launch(4, 16, *args, cluster=4)
    # The compiled dimensions: accepted, checked and not passed again (a
    # plain launch, as compiled).
    k.launch(4, 16, *args, cluster=(2, 1, 1))
    assert fake_last_launch_ex()[0] == ex
    assert rt.stats()["launches"] == launches + 2
    assert k.cluster_occupancy(4, 16).max_active_clusters == 64  # the compiled cluster
    buf.close()


@needs_fake
def test_stream_priority_option_and_property(rt):
    assert rt.stream_priority == 0 and rt.info()["stream_priority"] == 0
    with t4acuda.Runtime(stream_priority=-3) as r:
        assert r.stream_priority == -3 and r.info()["stream_priority"] == -3
    with t4acuda.Runtime(0, stream_priority=-5, staging_threads=2) as r:
        assert r.stream_priority == -5
    # Outside the device's range (0 down to -5): the library's refusal,
    # naming the value and the range.
    with pytest.raises(t4acuda.InvalidArgument,
                       match=r"stream_priority is -6; device 0 allows 0 .* down to -5"):
        t4acuda.Runtime(stream_priority=-6)
    with pytest.raises(t4acuda.InvalidArgument, match="stream_priority is 1;"):
        t4acuda.Runtime(stream_priority=1)
    # What would wrap in int32, or is not an int: refused by the binding.
    with pytest.raises(t4acuda.InvalidArgument, match=f"stream_priority is {2**32 - 3}"):
        t4acuda.Runtime(stream_priority=2**32 - 3)  # -3 once wrapped
    for bad in (-1.0, True, "-1"):
        with pytest.raises(TypeError, match="stream_priority must be an int"):
            t4acuda.Runtime(stream_priority=bad)  # type: ignore[arg-type]


@needs_fake
def test_launch_attributes_below_9_0_unsupported():
    # FAKE_CUDA_CC=80: the fake devices are compute capability 8.0.
    code = """
import t4acuda
src = 'extern "C" __global__ void k(float *y) { y[0] = 1.0f; }'
with t4acuda.Runtime() as rt:
    k = rt.load(t4acuda.compile(src, cc=(8, 0))).kernel("k")
    buf = rt.alloc(64)
    k.launch(2, 32, buf)  # without attributes: launched as before
    for what, call in [("cluster", lambda: k.launch(2, 32, buf, cluster=2)),
                       ("programmatic", lambda: k.launch(2, 32, buf, programmatic=True)),
                       ("occupancy", lambda: k.cluster_occupancy(2, 32, cluster=2))]:
        try:
            call()
        except t4acuda.Unsupported as e:
            print(what, "UNSUPPORTED", e.status_name, e.message)
        else:
            print(what, "launched")
    print("launches", rt.stats()["launches"])
"""
    r = run_py(code, FAKE_CUDA_CC="80")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4, r.stdout
    for what, line in zip(("cluster", "programmatic", "occupancy"), lines):
        assert line.startswith(f"{what} UNSUPPORTED T4A_ERROR_UNSUPPORTED "), line
        assert "9.0" in line and "8.0" in line, line
    assert lines[3] == "launches 1"


@needs_fake
def test_host_buffer_is_a_numpy_view_without_copy(rt):
    hb = rt.host_alloc(4096)
    view = hb.array(np.uint32)
    assert view.ctypes.data == hb.pointer and view.size == 1024
    view[:] = np.arange(1024, dtype=np.uint32)
    dev = rt.alloc(4096)
    dev.upload_host(hb)
    assert np.array_equal(dev.download(np.uint32), np.arange(1024, dtype=np.uint32))
    dev.fill(7)
    dev.download_host(hb)
    rt.synchronize()
    assert (hb.array(np.uint8) == 7).all()
    dev.close()
    hb.close()


@needs_fake
def test_untyped_scalars_rejected_and_sizes_checked(rt):
    art = t4acuda.compile(SAXPY, cc=(8, 0))
    mod = rt.load(art)
    k = mod.kernel("fill_f32")
    buf = rt.alloc(64)
    with pytest.raises(TypeError, match="plain Python float"):
        k.launch(1, 16, buf, 1.5, t4acuda.u32(16))
    with pytest.raises(TypeError, match="plain Python int"):
        k.launch(1, 16, buf, t4acuda.f32(1.5), 16)
    # The fake driver cannot tell parameter sizes: the binding's own check
    # runs with sizes given explicitly.
    k._params = (8, 4, 4)
    with pytest.raises(t4acuda.InvalidArgument, match="argument 1: 8 bytes given"):
        k.launch(1, 16, buf, t4acuda.f64(1.5), t4acuda.u32(16))
    with pytest.raises(t4acuda.InvalidArgument, match="takes 3 arguments, 2 given"):
        k.launch(1, 16, buf, t4acuda.f32(1.5))
    before = rt.stats()["launches"]
    k.launch(1, 16, buf, t4acuda.f32(1.5), np.uint32(16))
    p = k.prepare(1, 16, "buffer", t4acuda.f32, np.uint32)
    p(buf, 2.5, 16)
    with pytest.raises(TypeError, match="prepare"):
        k.prepare(1, 16, "buffer", float, "u32")
    with pytest.raises(t4acuda.InvalidArgument, match="grid"):
        k.launch(0, 16, buf, t4acuda.f32(1.5), t4acuda.u32(16))
    assert rt.stats()["launches"] == before + 2
    k.close()
    mod.close()
    art.close()
    buf.close()


@needs_fake
def test_completion_and_raw_scope(rt):
    c = rt.record()
    assert c.poll() is True
    c.wait()
    rt.wait(c)
    c.close()
    buf = rt.alloc(16)
    with rt.raw() as scope:
        assert scope.stream != 0
        assert scope.buffer_pointer(buf) == buf.device_pointer
    cai = buf.__cuda_array_interface__
    assert cai["version"] == 3 and cai["data"][0] == buf.device_pointer
    assert cai["stream"] == rt.stream and cai["typestr"] == "|u1"
    buf.close()


@needs_fake
def test_foreign_streams_as_ints_or_stream_objects(rt):
    fake = ctypes.CDLL(FAKE)
    fake.fake_cuda_stream_waits.restype = ctypes.c_ulong
    fake.fake_cuda_stream_waits.argtypes = [ctypes.c_void_p]
    with t4acuda.Runtime() as other:
        foreign = other.stream  # a CUstream the runtime under test does not own

        class Protocol:  # cuda.core, recent PyTorch
            def __cuda_stream__(self):
                return (0, foreign)

        class TorchLike:
            cuda_stream = foreign

        class CupyLike:
            ptr = foreign

        for s in (foreign, Protocol(), TorchLike(), CupyLike()):
            mine, theirs = fake.fake_cuda_stream_waits(rt.stream), \
                fake.fake_cuda_stream_waits(foreign)
            rt.wait_stream(s)
            assert fake.fake_cuda_stream_waits(rt.stream) == mine + 1
            rt.signal_stream(s)
            assert fake.fake_cuda_stream_waits(foreign) == theirs + 1

        class Junk:
            def __cuda_stream__(self):
                return foreign
        for bad in (True, 1.5, "0", object(), Junk(), None):
            for call in (rt.wait_stream, rt.signal_stream):
                with pytest.raises(TypeError, match="stream"):
                    call(bad)
        for bad in (-1, 2**64):
            with pytest.raises(t4acuda.InvalidArgument, match="not a CUstream"):
                rt.wait_stream(bad)


# ---- reprs: device, size, dtype; closed objects too

@needs_fake
def test_reprs_show_device_size_dtype_and_closed(rt):
    name = t4acuda.device_info(0)["name"]
    assert name and repr(rt) == f"<t4acuda.Runtime device=0 name={name!r}>"
    buf = rt.empty((4, 8), dtype=np.float32)
    assert repr(buf) == "<t4acuda.Buffer device=0 nbytes=128 dtype=float32 shape=(4, 8)>"
    raw = buf.view("uint8")
    assert repr(raw) == "<t4acuda.Buffer device=0 nbytes=128 dtype=uint8 shape=(128,)>"
    hb = rt.host_alloc(4096)
    assert repr(hb) == "<t4acuda.HostBuffer nbytes=4096>"
    d = raw.download_async(nbytes=64, offset=16)
    assert repr(d) == "<t4acuda.Download nbytes=64 pending>"
    d.wait()
    assert repr(d) == "<t4acuda.Download nbytes=64 delivered>"
    c = rt.record()
    rt.synchronize()
    assert repr(c) == "<t4acuda.Completion device=0 done>"
    c2 = c.retain()
    assert repr(c2) == repr(c)
    art = t4acuda.compile(SAXPY, cc=(8, 0), program_name="saxpy.cu")
    n = art.info()["image_bytes"]
    assert repr(art) == f"<t4acuda.Artifact name='saxpy.cu' cubin cc=8.0 image_bytes={n}>"
    mod = rt.load(art)
    assert repr(mod) == "<t4acuda.Module name='saxpy.cu' device=0>"
    k = mod.kernel("fill_f32")
    assert repr(k) == "<t4acuda.Kernel name='fill_f32' module='saxpy.cu' device=0>"
    anon = rt.load_data(art.image)
    assert repr(anon) == "<t4acuda.Module device=0>"
    assert repr(anon.kernel("fill_f32")) == "<t4acuda.Kernel name='fill_f32' device=0>"
    with rt.raw() as scope:
        assert repr(scope) == f"<t4acuda.RawScope device=0 stream={rt.stream:#x}>"
    assert repr(scope) == "<t4acuda.RawScope device=0 ended>"
    assert repr(t4acuda.DevicePointer(4096)) == "t4acuda.DevicePointer(0x1000)"
    # Closed or released: the same description, marked closed, no raise.
    for o in (k, anon, mod, art, c2, c, d, hb, raw, buf):
        o.close()
        assert o.closed
        assert re.fullmatch(rf"<t4acuda\.{type(o).__name__} .*closed>", repr(o)), repr(o)
    assert repr(art) == f"<t4acuda.Artifact name='saxpy.cu' cubin cc=8.0 image_bytes={n} closed>"
    assert repr(mod) == "<t4acuda.Module name='saxpy.cu' device=0 closed>"
    assert repr(buf) == ("<t4acuda.Buffer device=0 nbytes=128 dtype=float32 shape=(4, 8) "
                         "closed>")
    assert repr(hb) == "<t4acuda.HostBuffer nbytes=4096 closed>"
    assert repr(d) == "<t4acuda.Download nbytes=64 closed>"
    assert repr(c) == "<t4acuda.Completion device=0 closed>"
    assert repr(k) == "<t4acuda.Kernel name='fill_f32' module='saxpy.cu' device=0 closed>"
    closed_rt = t4acuda.Runtime()
    closed_rt.close()  # never asked before closing: the name still comes
    assert repr(closed_rt) == f"<t4acuda.Runtime device=0 name={name!r} closed>"


@needs_fake
@needs_dlpack
def test_repr_of_a_readonly_import(rt):
    backing = rt.upload(np.arange(8, dtype=np.float32))
    rb = t4acuda.from_dlpack(_Producer(backing.device_pointer, 8, readonly=True), runtime=rt)
    assert repr(rb) == ("<t4acuda.Buffer device=0 nbytes=32 dtype=float32 shape=(8,) "
                        "readonly>")
    rb.close()
    assert repr(rb).endswith(" readonly closed>")
    backing.close()


def test_repr_never_raises_on_forged_or_half_made_objects():
    forged = t4acuda.Completion(t4acuda._core._handle("t4a_completion", 0xdead0002))
    assert repr(forged) == "<t4acuda.Completion status=T4A_ERROR_INVALID_HANDLE>"
    art = t4acuda.Artifact(t4acuda._core._handle("t4a_artifact", 0xdead0003))
    assert repr(art) == "<t4acuda.Artifact ?>"  # its info() failed
    b = t4acuda.Buffer(None, t4acuda._core._handle("t4a_buffer", 0xdead0004), 16)
    assert repr(b) == "<t4acuda.Buffer device=? nbytes=16 dtype=uint8 shape=(16,)>"
    for o in (forged, art, b):
        o._h = None  # as if closed (the forged handles cannot be released)
        assert repr(o).endswith(" closed>")


# ---- types: py.typed, the declared error classes, the usage file runs

def test_package_is_typed_and_ships_the_marker():
    pkg = os.path.dirname(t4acuda.__file__)
    assert os.path.isfile(os.path.join(pkg, "py.typed"))
    # The wheel holds the whole package folder (scikit-build-core's
    # wheel.packages), so py.typed ships with it.
    with open(os.path.join(os.path.dirname(os.path.dirname(pkg)), "pyproject.toml"),
              encoding="utf-8") as f:
        assert re.search(r'^wheel\.packages = \["src/t4acuda"\]$', f.read(), re.M)


def test_error_classes_declared_for_type_checkers():
    # _errors makes one class per status at import; type checkers see the
    # classes of its `if TYPE_CHECKING:` block and __init__'s __all__.
    import ast
    from t4acuda import _errors
    with open(_errors.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    declared = {node.name for block in tree.body if isinstance(block, ast.If)
                and getattr(block.test, "id", None) == "TYPE_CHECKING"
                for node in block.body if isinstance(node, ast.ClassDef)}
    made = {cls.__name__ for cls in t4acuda.ERRORS.values()}
    assert declared == made, "declare the status classes of _layouts.json in _errors.py"
    assert made <= set(t4acuda.__all__)
    assert [n for n in t4acuda.__all__ if not hasattr(t4acuda, n)] == []


@needs_fake
def test_typecheck_usage_runs():
    # The file the type check checks (ctest python_typecheck) is a real
    # program: it runs to the end on the fake driver.
    path = os.path.join(os.path.dirname(__file__), "typecheck_usage.py")
    r = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "<t4acuda.Runtime device=0" in r.stdout and " closed>" in r.stdout


# ---- DLPack on the fake driver (once the library exports it)

@needs_fake
@needs_dlpack
def test_dlpack_export_capsule_deleter_runs_once(rt):
    buf = rt.upload(np.arange(16, dtype=np.int32))
    assert buf.__dlpack_device__() == (2, 0)
    before = rt.stats()["frees"]
    cap = buf.__dlpack__(stream=-1, max_version=(1, 0))
    assert '"dltensor_versioned"' in repr(cap)
    legacy = buf.__dlpack__(stream=-1)
    assert '"dltensor"' in repr(legacy)
    with pytest.raises(t4acuda.InvalidArgument):
        buf.__dlpack__(stream=0, max_version=(1, 0))
    buf.close()
    rt.synchronize()
    assert rt.stats()["frees"] == before  # the capsules keep it alive
    del cap, legacy
    rt.synchronize()
    assert rt.stats()["frees"] == before + 1


class _Producer:
    """A DLPack producer over device memory made by hand, whose deleter
    counts its calls."""

    def __init__(self, ptr, n, major=1, readonly=False):
        self.calls = 0
        self._shape = (ctypes.c_int64 * 1)(n)

        @ctypes.CFUNCTYPE(None, ctypes.POINTER(_ffi.DLManagedTensorVersioned))
        def deleter(_t):
            self.calls += 1
        self._deleter = deleter
        t = _ffi.DLManagedTensorVersioned()
        t.version.major, t.version.minor = major, 0
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


@needs_fake
@needs_dlpack
def test_from_dlpack_imports_and_calls_deleter_once(rt):
    backing = rt.upload(np.arange(8, dtype=np.float32))
    p = _Producer(backing.device_pointer, 8)
    b = t4acuda.from_dlpack(p, runtime=rt)
    assert b.shape == (8,) and b.dtype == np.float32 and not b.readonly
    assert np.array_equal(b.download(), np.arange(8, dtype=np.float32))
    assert p.calls == 0
    b.close()
    rt.synchronize()
    assert p.calls == 1
    bad = _Producer(backing.device_pointer, 8, major=2)
    with pytest.raises(t4acuda.Error):
        t4acuda.from_dlpack(bad, runtime=rt)
    rt.synchronize()
    assert bad.calls == 1
    ro = _Producer(backing.device_pointer, 8, readonly=True)
    rb = t4acuda.from_dlpack(ro, runtime=rt)
    assert rb.readonly
    with pytest.raises(t4acuda.InvalidArgument, match="read-only"):
        rb.fill(0)
    rb.close()
    backing.close()


class _StridedProducer(_Producer):
    """A 2-D producer whose strides (in elements) are given."""

    def __init__(self, ptr, shape, strides):
        super().__init__(ptr, 1)
        self._shape = (ctypes.c_int64 * 2)(*shape)
        self._strides = (ctypes.c_int64 * 2)(*strides)
        self._t.dl_tensor.ndim = 2
        self._t.dl_tensor.shape = self._shape
        self._t.dl_tensor.strides = self._strides

    def __dlpack__(self, stream=None, max_version=None, **_):
        # With a destructor that calls the deleter while unconsumed, as
        # real producers make them.
        from t4acuda._dlpack import _New, _DESTRUCTOR
        return _New(ctypes.addressof(self._t), b"dltensor_versioned",
                    _DESTRUCTOR.value)


@needs_fake
@needs_dlpack
def test_from_dlpack_non_compact_strides_refused_not_misread(rt):
    # A transposed 2x2 view of [0, 1, 2, 3]: read as C-order it would give
    # [[0, 1], [2, 3]] instead of [[0, 2], [1, 3]]; a column slice of a
    # 2x3 array spans 5 elements for 4. The Buffer has no strides: refused
    # before the capsule is consumed (its destructor calls the deleter).
    backing = rt.upload(np.arange(6, dtype=np.float32))
    for shape, strides in (((2, 2), (1, 2)), ((2, 2), (3, 1)), ((2, 2), (-2, 1))):
        p = _StridedProducer(backing.device_pointer, shape, strides)
        with pytest.raises(BufferError, match="strides"):
            t4acuda.from_dlpack(p, runtime=rt)
        gc.collect()  # the traceback's frames held the capsule
        assert p.calls == 1
    # Compact strides (and any stride on an extent-1 dimension) import.
    for shape, strides in (((2, 3), (3, 1)), ((1, 3), (99, 1))):
        p = _StridedProducer(backing.device_pointer, shape, strides)
        b = t4acuda.from_dlpack(p, runtime=rt)
        assert b.shape == shape
        assert np.array_equal(b.download(),
                              np.arange(6, dtype=np.float32)[:shape[0] * shape[1]]
                              .reshape(shape))
        b.close()
        rt.synchronize()
        assert p.calls == 1
    backing.close()


@needs_fake
@needs_dlpack
def test_from_dlpack_of_a_buffer_of_the_same_runtime(rt):
    # Its export may not run inside the importing runtime's raw scope
    # (REENTRANT); one stream needs no ordering.
    buf = rt.upload(np.arange(8, dtype=np.float32))
    b = rt.from_dlpack(buf)
    assert b.shape == (8,) and b.dtype == np.float32
    assert np.array_equal(b.download(), np.arange(8, dtype=np.float32))
    b.close()
    buf.close()


@needs_fake
def test_host_buffer_view_outlives_close(rt):
    # close() (a `with` block's end) while a view is alive: the view keeps
    # the memory, which a new allocation must not be handed.
    with rt.host_alloc(4096) as hb:
        view = hb.array(np.uint8)
        view[:] = 7
    others = [rt.host_alloc(4096) for _ in range(4)]
    assert all(o.pointer != view.ctypes.data for o in others)
    for o in others:
        o.array()[:] = 9
    assert (view == 7).all()
    for o in others:
        o.close()
    del view
    gc.collect()


# ---- module globals and name expressions on the fake driver (issue 23 items 5, 6)

GLOBALS = r"""
__constant__ float table[16];
__device__ unsigned counter;
template <int N, bool Add> __global__ void apply(float *out) {
  out[threadIdx.x] = Add ? table[threadIdx.x % N] : 0.0f;
}
"""


@needs_fake
def test_module_global_is_a_buffer_view(rt):
    art = t4acuda.compile(GLOBALS, cc=(9, 0), cache_dir="",
                          name_expressions=["table", "&counter", "apply<4, true>"])
    assert art.lowered_name_of("&table") == "table"
    assert art.lowered_name_of("apply<4,true>") == art.lowered_name(2)
    with pytest.raises(t4acuda.UnknownEntryPoint, match="'apply<8, true>'"):
        art.lowered_name_of("apply<8, true>")
    mod = rt.load(art)
    k = mod.kernel("apply< 4, true >")  # by expression, whitespace ignored
    table = mod.get_global("table", np.float32)
    counter = mod.get_global("counter")
    assert table.is_view and counter.is_view
    assert table.nbytes == 64 and table.shape == (16,) and counter.nbytes == 4
    assert not rt.alloc(4).is_view
    with pytest.raises(t4acuda.UnknownEntryPoint, match="no_such_thing"):
        mod.get_global("no_such_thing")
    mod.close()  # the views keep the module loaded
    values = np.linspace(-1, 1, 16, dtype=np.float32)
    table.upload(values)
    assert np.array_equal(table.download(), values)
    counter.fill(0x11)
    assert counter.download(np.uint32)[0] == 0x11111111
    with pytest.raises(t4acuda.InvalidArgument, match="64 bytes"):
        table.upload(np.zeros(17, np.float32))
    out = rt.alloc(64)
    out.copy_from(table)
    assert np.array_equal(out.download(np.float32), values)
    k.launch(1, 16, table)
    rt.synchronize()
    for b in (table, counter, out, k, art):
        b.close()


def test_package_imports_have_no_cycle():
    # Each module of the package imports only modules below it: a cycle
    # (once _core and _dlpack imported each other) makes import order
    # matter and hides which module owns what.
    import ast
    pkg = os.path.dirname(t4acuda.__file__)
    names = [f[:-3] for f in os.listdir(pkg) if f.endswith(".py")]
    edges = {}
    for name in names:
        with open(os.path.join(pkg, name + ".py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps.update(a.name for a in node.names)
        edges[name] = deps & set(names)

    def reaches(start, goal, seen):
        for d in edges[start]:
            if d == goal or (d not in seen and reaches(d, goal, seen | {d})):
                return True
        return False

    cyclic = sorted(n for n in names if reaches(n, n, {n}))
    assert cyclic == [], f"modules in an import cycle: {cyclic} ({edges})"


# ---- validation: no memory corruption from Python (issue 24 item 3)

INT64_MAX = 2**63 - 1
ALLOWED_DTYPES = [np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128)]
REFUSED_DTYPES = [object, "V8", [("a", "f4")], [("a", "f4"), ("b", "O")], ("f4", (2,)),
                  "U3", "S4", "M8[s]", "m8[ns]", np.dtype("f4").newbyteorder(),
                  np.longdouble, np.clongdouble]


def ref_dims(shape, dtype, nbytes=None, offset=0):
    """The rules of docs/python.md ("Validation") written out: the dims
    `shape` (None: as many elements as fit) gives for `dtype` in `nbytes`
    bytes from `offset` (None: unbounded), or None where it is refused."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    if dt not in ALLOWED_DTYPES:
        return None
    if shape is None:
        shape = (nbytes - offset) // dt.itemsize
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if len(dims) > 32 or not all(isinstance(d, (int, np.integer)) and
                                 not isinstance(d, (bool, np.bool_)) and d >= 0
                                 for d in dims):
        return None
    dims = tuple(int(d) for d in dims)  # NumPy integers would wrap below
    if dt.itemsize * math.prod(max(d, 1) for d in dims) > INT64_MAX:
        return None  # a C-order stride would not fit in int64
    if nbytes is not None and offset + dt.itemsize * math.prod(dims) > nbytes:
        return None
    return dims


def assert_interface(buf, dims, dt):
    """What the buffer advertises to a consumer is its description and
    stays inside its bytes."""
    cai = buf.__cuda_array_interface__
    assert cai["shape"] == dims and all(type(d) is int for d in cai["shape"])
    assert np.dtype(cai["typestr"]) == dt and cai["strides"] is None
    assert cai["data"] == (buf.device_pointer, buf.readonly) and cai["version"] == 3
    assert dt.itemsize * math.prod(dims) <= buf.nbytes
    assert dt.itemsize * math.prod(max(d, 1) for d in dims) <= INT64_MAX


class _AnyProducer(_Producer):
    """A producer of any shape, strides (None: compact) and DLPack dtype,
    whose capsule's destructor calls the deleter while unconsumed."""

    def __init__(self, ptr, shape, strides, dtype):
        super().__init__(ptr, 1)
        n = max(len(shape), 1)
        self._shape = (ctypes.c_int64 * n)(*shape)
        self._t.dl_tensor.ndim = len(shape)
        self._t.dl_tensor.shape = self._shape
        if strides is not None:
            self._strides = (ctypes.c_int64 * n)(*strides)
            self._t.dl_tensor.strides = self._strides
        self._t.dl_tensor.dtype = _ffi.DLDataType(*dtype)

    __dlpack__ = _StridedProducer.__dlpack__


@needs_fake
def test_shapes_offsets_and_sizes_checked_without_wrap(rt):
    # Issue 24: view(shape=(2**32, 2**32)) of 64 bytes was accepted (an
    # int64 product wrapping to 0) and advertised to consumers; negative
    # extents too; sizes and offsets wrapped at 64 bits in ctypes.
    buf = rt.alloc(64)
    for shape in ((2**32, 2**32), (-1,), (4, -4), (True,), (2.0,), ("4",), "16",
                  (0, 2**62), (17,), (1,) * 33, 2**64):
        with pytest.raises(t4acuda.InvalidArgument, match="shape") as e:
            buf.view("float32", shape=shape)
        assert e.value.entry_point == "Buffer.view"
    assert buf.view("float32", np.int64(16)).shape == (16,)
    assert buf.view("float32", (0, 2**40)).shape == (0, 2**40)
    assert buf.__cuda_array_interface__["shape"] == (64,)
    with pytest.raises(AttributeError):
        buf.shape = (2**32, 2**32)  # the description is read-only
    for shape in ((2**32, 2**32), -1, (2, 2.5)):
        with pytest.raises(t4acuda.InvalidArgument, match="shape"):
            rt.empty(shape, "uint8")
    for n in (2**64, 2**64 + 16, -1, 1.5, True):
        with pytest.raises(t4acuda.InvalidArgument, match="nbytes"):
            rt.alloc(n)
    with pytest.raises(t4acuda.InvalidArgument, match="shape"):
        rt.alloc(16, dtype=np.float32, shape=(5,))
    with pytest.raises(t4acuda.InvalidArgument, match="shape"):
        buf.download(np.float32, shape=(2**32, 2**32))
    with pytest.raises(t4acuda.InvalidArgument, match="needs 64 bytes from offset 4"):
        buf.download(np.float32, shape=(16,), offset=4)
    assert buf.download(np.float32, offset=8).shape == (14,)
    with pytest.raises(t4acuda.InvalidArgument, match="offset"):
        buf.download(offset=-4)
    with pytest.raises(t4acuda.InvalidArgument, match="value is 321"):
        buf.fill(0x141)
    for kw in ({"offset": 2**64}, {"offset": 65}, {"nbytes": 2**64 + 1}):
        with pytest.raises(t4acuda.InvalidArgument):
            buf.fill(1, **kw)
    with pytest.raises(t4acuda.InvalidArgument, match="src_offset"):
        buf.copy_from(buf, src_offset=2**64)
    with pytest.raises(t4acuda.InvalidArgument, match="offset"):
        buf.download_async(offset=-1)
    hb = rt.host_alloc(64)
    with pytest.raises(t4acuda.InvalidArgument, match="shape"):
        hb.array(np.float32, (2**32, 2**32))
    with pytest.raises(t4acuda.InvalidArgument, match="needs 80 bytes"):
        hb.array(np.float32, (4, 5))
    assert hb.array(np.float64, (2, 4)).shape == (2, 4)
    hb.close()
    buf.close()


@needs_fake
@needs_dlpack
def test_from_dlpack_shape_checked_after_import(rt):
    # An empty tensor whose C-order strides overflow int64 is a valid
    # import for the library (0 bytes) but not a shape to advertise: the
    # buffer is released and the deleter still runs once.
    backing = rt.alloc(64)
    p = _AnyProducer(backing.device_pointer, (0, 2**62), None, (_ffi.kDLFloat, 32, 1))
    with pytest.raises(t4acuda.InvalidArgument, match="overflow int64"):
        t4acuda.from_dlpack(p, runtime=rt)
    gc.collect()
    rt.synchronize()
    assert p.calls == 1
    # Float bits 128 (not NumPy's longdouble) and 32-bit bools import as bytes.
    for dtype, n in (((_ffi.kDLFloat, 128, 1), 2), ((_ffi.kDLBool, 32, 1), 4)):
        p = _AnyProducer(backing.device_pointer, (n,), None, dtype)
        b = t4acuda.from_dlpack(p, runtime=rt)
        assert b.dtype == np.uint8 and b.shape == (b.nbytes,) == (n * dtype[1] // 8,)
        b.close()
    # A 0-d buffer is not exported as 1-D over its bytes.
    with pytest.raises(BufferError, match="0-d"):
        backing.view(np.float32, ()).__dlpack__(stream=-1, max_version=(1, 0))
    backing.close()


@needs_fake
def test_object_and_other_non_numeric_dtypes_refused(rt, tmp_path):
    # Issue 24: rt.empty(4, dtype=object), fill(0x41), download() put raw
    # device bytes in an object array (printing it segfaults).
    buf = rt.alloc(64)
    hb = rt.host_alloc(64)
    for dt in REFUSED_DTYPES + ["not a dtype"]:
        calls = [lambda: rt.empty(4, dtype=dt), lambda: rt.alloc(64, dtype=dt),
                 lambda: buf.view(dt), lambda: buf.download(dt), lambda: hb.array(dt)]
        a = np.zeros(2, dt) if dt != "not a dtype" else None
        if a is not None and a.dtype not in ALLOWED_DTYPES:  # ("f4", (2,)) is f4
            calls += [lambda: rt.upload(a), lambda: buf.upload(a)]
        for call in calls:
            with pytest.raises(t4acuda.InvalidArgument, match="dtype"):
                call()
    for dt in ALLOWED_DTYPES:
        assert rt.empty(3, dt, zero=True).download().tolist() == [0] * 3
        assert buf.view(dt).shape == (64 // dt.itemsize,)
    art = t4acuda.compile(GLOBALS, cc=(9, 0), cache_dir=str(tmp_path))
    mod = rt.load(art)
    with pytest.raises(t4acuda.InvalidArgument, match="dtype"):
        mod.get_global("table", object)
    with pytest.raises(t4acuda.InvalidArgument, match="needs 68 bytes"):
        mod.get_global("table", np.float32, (17,))
    assert mod.get_global("table", np.float32, (4, 4)).shape == (4, 4)
    for x in (mod, art, hb, buf):
        x.close()


@needs_fake
def test_out_arrays_must_be_writeable(rt):
    # Issue 24: Download.wait(out=...) / poll(out=...) wrote into a
    # read-only array; out= is checked the same way everywhere.
    buf = rt.upload(np.arange(16, dtype=np.uint8))
    d = buf.download_async()
    for ro in (np.zeros(16, np.uint8), np.zeros(32, np.uint8)[:16]):
        ro.flags.writeable = False
        for call in (d.wait, d.poll, buf.download):
            with pytest.raises(t4acuda.InvalidArgument, match="read-only"):
                call(out=ro)
        assert not ro.any()
    ro = np.frombuffer(bytes(16), np.uint8)  # read-only memory
    with pytest.raises(t4acuda.InvalidArgument, match="read-only"):
        d.wait(out=ro)
    for bad in (np.zeros(16, object), bytearray(16), np.zeros(32, np.uint8)[::2]):
        for call in (d.wait, d.poll, buf.download):
            with pytest.raises(t4acuda.InvalidArgument, match="out"):
                call(out=bad)
    for call in (d.wait, d.poll):
        with pytest.raises(t4acuda.InvalidArgument, match="out has 8 bytes"):
            call(out=np.zeros(8, np.uint8))
    with pytest.raises(t4acuda.InvalidArgument, match="out has 17 bytes"):
        buf.download(out=np.zeros(17, np.uint8))
    with pytest.raises(t4acuda.InvalidArgument, match="out has 16 bytes"):
        buf.download(out=np.zeros(16, np.uint8), offset=8)
    out = np.zeros(5, np.float32)  # 20 bytes: a larger out takes the 16
    assert d.wait(out=out) is out and out.view(np.uint8)[:16].tolist() == list(range(16))
    out = np.zeros(8, np.uint8)
    assert buf.download(out=out, offset=8) is out and out.tolist() == list(range(8, 16))
    d.close()
    buf.close()


# ---- buffer reuse (docs/python.md, "Buffer reuse")

def _reuse_delta(rt, before):
    now = rt.reuse_stats()
    return {k: now[k] - before[k] for k in ("hits", "misses", "returned", "refused",
                                           "released")} | {"kept": now["kept"]}


@needs_fake
def test_buffer_reuse_serves_the_same_size_without_the_library(rt):
    a = rt.alloc(4096)
    hid = a._h.id
    before, lib = rt.reuse_stats(), rt.stats()
    a.close()
    assert a.closed and rt.reuse_stats()["kept"] == 1
    assert rt.stats()["bytes_allocated"] == lib["bytes_allocated"]  # still the library's
    b = rt.alloc(4096, dtype="float32")  # any description of that size
    assert b._h.id == hid and b.dtype == np.float32 and b.shape == (1024,)
    assert rt.stats()["allocations"] == lib["allocations"]  # no library allocation
    assert _reuse_delta(rt, before) == {"hits": 1, "misses": 0, "returned": 1,
                                        "refused": 0, "released": 0, "kept": 0}
    b.upload(np.arange(1024, dtype=np.float32))
    assert b.download()[5] == 5.0  # it is ordinary memory
    c = rt.alloc(8192)  # another size: from the library
    assert c._h.id != hid and rt.stats()["allocations"] == lib["allocations"] + 1
    assert rt.reuse_stats()["misses"] == before["misses"] + 1
    z = rt.alloc(4096, zero=True)  # never kept memory: it must read zero
    b.close()
    z2 = rt.alloc(4096, zero=True)
    assert z2._h.id != hid and rt.reuse_stats()["kept"] == 1
    assert not z2.download(np.uint8).any()
    for x in (c, z, z2):
        x.close()
    del b  # closed already: its finalizer keeps nothing twice
    gc.collect()
    assert rt.reuse_stats()["kept"] == 4


@needs_fake
def test_shared_buffers_are_never_kept(rt):
    before = rt.reuse_stats()

    def kept_after(share):
        b = rt.alloc(256)
        share(b)
        b.close()
        return rt.reuse_stats()["kept"]

    assert kept_after(lambda b: None) == 1
    rt.trim()  # releases it: every case below starts from none kept
    assert rt.reuse_stats()["kept"] == 0
    views = []
    cases = {
        "retain": lambda b: views.append(b.retain()),
        "view": lambda b: views.append(b.view("float32")),
        "handle": lambda b: b.handle,
        "info": lambda b: b.info(),
        "device_pointer": lambda b: b.device_pointer,
        "cuda_array_interface": lambda b: b.__cuda_array_interface__,
        "dlpack": lambda b: views.append(b.__dlpack__()),
    }
    for name, share in cases.items():
        assert kept_after(share) == 0, name
    with rt.raw() as scope:
        b = rt.alloc(256)
        scope.buffer_pointer(b)
    b.close()
    assert rt.reuse_stats()["kept"] == 0
    # The other references still reach live memory.
    for v in views[:2]:
        v.fill(7)
        assert v.download(np.uint8)[0] == 7
        v.close()
    assert rt.reuse_stats()["kept"] == 0
    assert rt.reuse_stats()["returned"] == before["returned"] + 1


@needs_fake
def test_buffers_of_a_capture_are_released_not_kept(rt):
    k = rt.load(t4acuda.compile(SAXPY, cc=(8, 0))).kernel("fill_f32")
    used, unused = rt.alloc(64), rt.alloc(64)
    rt.alloc(64).close()  # one kept before the capture
    assert rt.reuse_stats()["kept"] == 1
    with rt.capture() as cap:
        # An allocation during the capture is refused as the library
        # refuses it, kept memory or not.
        with pytest.raises(t4acuda.Capturing):
            rt.alloc(64)
        k.launch(1, 16, used, t4acuda.f32(3.0), t4acuda.u32(16))
    used.close()  # the graph holds it: never handed to another allocation
    unused.close()  # allocated before the capture: released too
    assert rt.reuse_stats()["kept"] == 1
    after = rt.alloc(64)  # the one kept before the capture
    fresh = rt.alloc(64)  # from the library
    assert rt.reuse_stats()["kept"] == 0
    after.fill(0)
    fresh.fill(0)
    cap.graph.launch()  # writes `used`, which the graph keeps: nobody else has it
    assert not after.download(np.uint8).any() and not fresh.download(np.uint8).any()
    # Buffers allocated after the capture ended are kept again.
    after.close()
    fresh.close()
    assert rt.reuse_stats()["kept"] == 2
    cap.graph.close()


@needs_fake
def test_buffer_reuse_limit_trim_close_and_option():
    with t4acuda.Runtime(reuse_bytes=2 << 20) as rt:
        bufs = [rt.alloc(1 << 20) for _ in range(3)]
        big = rt.alloc(3 << 20)
        for b in bufs + [big]:
            b.close()
        s = rt.reuse_stats()
        assert (s["kept"], s["kept_bytes"], s["refused"]) == (2, 2 << 20, 2)
        live = rt.stats()["bytes_allocated"]
        rt.trim()
        s = rt.reuse_stats()
        assert (s["kept"], s["kept_bytes"], s["released"]) == (0, 0, 2)
        assert rt.stats()["bytes_allocated"] == live - (2 << 20)
        late = rt.alloc(1 << 20)
        rt.alloc(1 << 20).close()
        assert rt.reuse_stats()["kept"] == 1
    assert rt.closed
    late.close()  # after its runtime: released to the library, not kept
    assert rt.reuse_stats()["kept"] == 0 and rt.reuse_stats()["released"] == 3
    with t4acuda.Runtime(reuse_bytes=0) as rt0:
        rt0.alloc(64).close()
        assert rt0.reuse_stats()["kept"] == 0 and rt0.reuse_stats()["hits"] == 0
    for bad in (-1, 2**64, 1.5, "64", None):
        with pytest.raises((t4acuda.InvalidArgument, TypeError), match="reuse_bytes"):
            t4acuda.Runtime(reuse_bytes=bad)
    # Whoever has the runtime's handle could capture behind Python's back.
    with t4acuda.Runtime() as rt2:
        rt2.alloc(64).close()
        assert rt2.handle.id and rt2.reuse_stats()["kept"] == 0
        rt2.alloc(64).close()
        assert rt2.reuse_stats()["kept"] == 0


@needs_fake
def test_out_of_memory_releases_kept_buffers_and_retries(rt):
    rt.alloc(1 << 16).close()
    assert rt.reuse_stats()["kept"] == 1
    fake = ctypes.CDLL(FAKE)
    assert fake.fake_cuda_fail_next(b"cuMemAllocFromPoolAsync", 2) == 0  # OUT_OF_MEMORY
    b = rt.alloc(1 << 17)
    s = rt.reuse_stats()
    assert s["kept"] == 0 and s["released"] == 1
    b.close()
    assert fake.fake_cuda_fail_next(b"cuMemAllocFromPoolAsync", 2) == 0
    rt.trim()
    with pytest.raises(t4acuda.OutOfMemory):  # nothing kept: the refusal stands
        rt.alloc(1 << 18)


@needs_fake
def test_buffer_reuse_under_threads_hands_each_handle_to_one_owner(rt):
    import threading
    live, lock, errors = set(), threading.Lock(), []

    def work():
        try:
            for i in range(2000):
                b = rt.alloc(512 * (1 + i % 3))
                with lock:
                    assert b._h.id not in live
                    live.add(b._h.id)
                with lock:
                    live.discard(b._h.id)
                b.close()
        except BaseException as e:  # reported below
            errors.append(e)

    before = rt.reuse_stats()
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    s = rt.reuse_stats()
    hits, misses = s["hits"] - before["hits"], s["misses"] - before["misses"]
    assert hits + misses == 8000 and s["returned"] - before["returned"] == 8000
    assert s["kept"] == 8000 - hits == misses and s["kept"] <= 12


@needs_fake
def test_buffer_reuse_limit_is_exact_after_many_hits():
    # Hits do not lower the kept-bytes bound (they take no lock); a close
    # the bound would refuse counts what is kept first, so buffers up to
    # the limit are still kept, and one past it is refused.
    size = 1 << 20
    with t4acuda.Runtime(reuse_bytes=2 * size) as rt:
        for b in [rt.alloc(size), rt.alloc(size)]:
            b.close()
        lib = rt.stats()["allocations"]
        for _ in range(100):
            a, b = rt.alloc(size), rt.alloc(size)
            a.close()
            b.close()
        s = rt.reuse_stats()
        assert (s["kept"], s["kept_bytes"], s["refused"]) == (2, 2 * size, 0)
        assert s["hits"] == 200 and rt.stats()["allocations"] == lib
        extra = [rt.alloc(size) for _ in range(3)]  # 2 hits, 1 from the library
        for b in extra:  # the third is one past the limit
            b.close()
        s = rt.reuse_stats()
        assert (s["kept"], s["kept_bytes"]) == (2, 2 * size)
        assert s["refused"] == 1 and s["hits"] == 202


@needs_fake
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")
def test_a_forked_child_forgets_the_kept_buffers(rt):
    rt.alloc(4096).close()
    rt.alloc(8192).close()
    before = rt.reuse_stats()
    assert before["kept"] == 2
    pid = os.fork()
    if pid == 0:  # the child: only Python, the parent's handles are not used
        try:
            s = rt.reuse_stats()
            ok = (s["kept"], s["kept_bytes"], s["hits"], s["released"]) == \
                (0, 0, before["hits"], before["released"])
            ok = ok and rt._reuse.take(4096) is None  # nothing handed out
            os._exit(0 if ok else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert rt.reuse_stats() == before  # the parent keeps them
    assert rt.alloc(4096)._h.id  # and reuses them


class _Racy:
    """sys.setswitchinterval(1e-6) for a block: threads switch as often as
    the interpreter lets them, so lock-free steps interleave."""

    def __enter__(self):
        self.old = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)

    def __exit__(self, *exc):
        sys.setswitchinterval(self.old)


def _run_threads(n, work):
    import threading
    errors = []

    def run(i):
        try:
            work(i)
        except BaseException as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    with _Racy():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[:3]


@needs_fake
def test_buffer_reuse_same_size_under_threads_is_exact():
    # One size, a limit of 3 buffers for 6 threads of 3 each: lock-free
    # takes race each other and locked keeps, and the limit refuses.
    import threading
    size, threads, rounds = 1 << 20, 6, 400
    live, lock = {}, threading.Lock()
    with t4acuda.Runtime(reuse_bytes=3 * size) as rt:
        lib, before = rt.stats(), rt.reuse_stats()

        def work(i):
            for _ in range(rounds):
                bufs = [rt.alloc(size) for _ in range(3)]
                for b in bufs:
                    with lock:  # no handle has two owners at once
                        assert b._h.id not in live, "a handle handed to two owners"
                        live[b._h.id] = b
                for b in bufs:
                    with lock:
                        del live[b._h.id]
                    b.close()
        _run_threads(threads, work)
        s, now = rt.reuse_stats(), rt.stats()
        allocs = threads * rounds * 3
        d = {k: s[k] - before[k] for k in ("hits", "misses", "returned", "refused")}
        assert d["hits"] + d["misses"] == allocs
        assert d["returned"] + d["refused"] == allocs  # every close kept or refused
        assert s["kept"] == d["returned"] - d["hits"] and s["released"] == 0
        assert s["kept_bytes"] == s["kept"] * size <= 3 * size
        # The library agrees: a miss allocated, a refusal freed, and what is
        # kept is all that is still allocated.
        assert now["allocations"] - lib["allocations"] == d["misses"]
        assert now["frees"] - lib["frees"] == d["refused"]
        assert now["bytes_allocated"] - lib["bytes_allocated"] == s["kept_bytes"]
        assert d["hits"] > 0 and d["refused"] > 0  # both paths ran


class _FakeBuffer:
    """What BufferReuse.keep reads of a Buffer."""
    __slots__ = ("_h", "_desc", "_reuse_epoch")

    def __init__(self, h, n, epoch=0):
        self._h, self._desc, self._reuse_epoch = h, (n, None, None), epoch


def test_buffer_reuse_take_racing_drain_hands_each_handle_out_once():
    # BufferReuse alone (no library, fake handles): lock-free takes race
    # locked keeps and a thread draining (trim) all the time. A handle both
    # taken and drained would show as a second owner, a handle drained
    # twice, or hits that differ from the takers' own count.
    import itertools
    import threading
    from t4acuda import _reuse
    r = _reuse.BufferReuse(64 * 1000)
    fresh = itertools.count(1)
    owned, drained, lock = set(), [], threading.Lock()
    counts = {"hits": 0, "misses": 0, "done": 0}
    workers, rounds = 4, 4000

    def work(i):
        if i == workers:  # the drainer, until the others are done
            while counts["done"] < workers:
                out = r.drain()
                with lock:
                    assert not owned & set(out), "a handle drained while owned"
                    drained.extend(out)
            return
        hits = misses = 0
        try:
            for _ in range(rounds):
                h = r.take(64)
                if h is None:
                    misses += 1
                    h = next(fresh)
                else:
                    hits += 1
                with lock:
                    assert h not in owned, "a handle taken by two owners"
                    owned.add(h)
                with lock:
                    owned.discard(h)
                assert r.keep(_FakeBuffer(h, 64)) is None  # kept: the limit is ample
        finally:
            with lock:
                counts["hits"] += hits
                counts["misses"] += misses
                counts["done"] += 1
    _run_threads(workers + 1, work)
    s = r.stats()
    left = r.drain()
    out = drained + left
    assert len(out) == len(set(out)), "a handle drained twice"
    assert s["kept"] == len(left) and r.stats()["kept"] == 0
    assert (s["hits"], s["misses"]) == (counts["hits"], counts["misses"])
    assert s["hits"] + s["misses"] == workers * rounds and s["refused"] == 0
    assert s["released"] == len(drained) > 0 and counts["hits"] > 0
    assert s["returned"] == workers * rounds


class _HookList(list):
    """A kept-handles list whose first pop() runs `hook` before popping:
    it places another thread's step at that point, deterministically."""

    def __init__(self, items, hook):
        super().__init__(items)
        self.hook = hook

    def pop(self, *args):
        hook, self.hook = self.hook, None
        if hook is not None:
            hook(self)
        return super().pop(*args)


def test_buffer_reuse_drain_between_a_takes_lookup_and_its_pop():
    from t4acuda import _reuse
    r = _reuse.BufferReuse(1 << 20)
    assert r.keep(_FakeBuffer("h1", 64)) is None
    drained = []
    # A take found the list; a drain runs before its pop: the drain gets
    # the handle, the take none (a miss).
    r._lists[64] = _HookList(r._lists[64], lambda lst: drained.extend(r.drain()))
    assert r.take(64) is None and drained == ["h1"]
    s = r.stats()
    assert (s["hits"], s["misses"], s["released"], s["kept"]) == (0, 1, 1, 0)
    # A drain swapped the dict; a take that found the old list pops before
    # the drain does: each handle goes to one of them.
    for h in ("h2", "h3"):
        assert r.keep(_FakeBuffer(h, 64)) is None
    taken = []
    r._lists[64] = _HookList(r._lists[64], lambda lst: taken.append(list.pop(lst)))
    out = r.drain()
    assert sorted(out + taken) == ["h2", "h3"] and len(taken) == 1
    s = r.stats()
    assert (s["hits"], s["released"], s["kept"], s["returned"]) == (1, 2, 0, 3)


@needs_fake
def test_trim_between_a_takes_lookup_and_its_pop_leaves_it_a_miss(rt):
    size = 4096
    rt.alloc(size).close()
    lib, before = rt.stats(), rt.reuse_stats()
    reuse = rt._reuse
    reuse._lists[size] = _HookList(reuse._lists[size], lambda lst: rt.trim())
    b = rt.alloc(size)  # trim released the kept one: this is the library's
    b.fill(7)  # a live handle (a released one would raise InvalidHandle)
    assert b.download(np.uint8)[0] == 7
    s, now = rt.reuse_stats(), rt.stats()
    assert s["hits"] == before["hits"] and s["misses"] == before["misses"] + 1
    assert s["released"] == before["released"] + 1 and s["kept"] == 0
    assert now["frees"] == lib["frees"] + 1 and now["allocations"] == lib["allocations"] + 1
    b.close()


@needs_fake
def test_close_takes_the_handle_under_the_reuse_lock(rt):
    import threading
    for share in (False, True):  # kept (keep) or released (_take)
        b = rt.alloc(4096)
        if share:
            b.info()
        reuse = rt._reuse
        assert reuse._enter()  # another thread's locked step
        try:
            t = threading.Thread(target=b.close)
            t.start()
            t.join(0.2)
            assert t.is_alive() and not b.closed, "close did not wait for the lock"
        finally:
            reuse._exit()
        t.join()
        assert b.closed
    # Dropped, a buffer is kept as if closed; a finalizer that runs inside
    # a locked step of this same thread (a garbage collection there) does
    # not wait for the lock: it releases the buffer.
    b = rt.alloc(4096)
    returned, frees = rt.reuse_stats()["returned"], rt.stats()["frees"]
    del b
    assert rt.reuse_stats()["returned"] == returned + 1 and rt.stats()["frees"] == frees
    b = rt.alloc(4096)
    kept = rt.reuse_stats()["kept"]
    assert rt._reuse._enter()
    try:
        del b
    finally:
        rt._reuse._exit()
    assert rt.reuse_stats()["kept"] == kept and rt.stats()["frees"] == frees + 1
    assert rt.reuse_stats()["returned"] == returned + 1


# A user's __del__ that closes a buffer (shared or not), run by the garbage
# collector inside a locked step of the reuse (trim's drain allocates while
# it holds the lock): each once hung on the non-re-entrant lock. In a child
# process, so that a hang fails the test instead of hanging the suite.
_GC_CLOSE = """
import gc, sys, t4acuda
rt = t4acuda.Runtime()
class Holder:
    def __init__(self, buf):
        self.buf, self.cycle = buf, self  # a cycle: only the collector frees it
    def __del__(self):
        self.buf.close()
gc.set_threshold(3)
share = sys.argv[1] == "shared"
for i in range(600):
    rt.alloc(4096).close()  # one kept buffer: trim's drain has work
    s = rt.alloc(64)
    if share:
        s.handle
    junk = [object() for _ in range(i % 7)]
    Holder(s); s = None
    rt.trim()
gc.collect()
lib = rt.stats()
assert lib["bytes_allocated"] == rt.reuse_stats()["kept_bytes"], (lib, rt.reuse_stats())
print("ok")
"""


@needs_fake
@pytest.mark.parametrize("kind", ["shared", "kept"])
def test_user_finalizer_closing_inside_a_locked_step_does_not_hang(kind):
    r = subprocess.run([sys.executable, "-c", _GC_CLOSE, kind], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


@needs_fake
def test_owned_objects_cannot_be_copied_or_pickled(rt):
    import copy
    import pickle
    b = rt.alloc(64)
    for f in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match=r"t4acuda\.Buffer cannot be copied.*retain\(\)"):
            f(b)
    with pytest.raises(TypeError, match=r"t4acuda\.Runtime cannot be copied"):
        copy.copy(rt)
    b.close()
    assert rt.reuse_stats()["returned"] >= 1


@needs_fake
def test_retain_racing_close_never_aliases(rt):
    # retain marks the buffer shared before it reads the handle: a close
    # between the two releases it (retain fails, naming the closed
    # buffer); it is never kept for another owner.
    b = rt.alloc(4096)
    orig = type(b)._live

    def closing_live(self):
        type(self)._live = orig  # once
        self.close()
        return orig(self)
    type(b)._live = closing_live
    try:
        with pytest.raises(t4acuda.InvalidHandle, match="closed"):
            b.retain()
    finally:
        type(b)._live = orig
    kept = rt.reuse_stats()["kept"]
    assert kept == 0, "a buffer being retained was kept for reuse"


@needs_fake
def test_two_threads_closing_one_buffer_release_or_keep_it_once(rt):
    # Threads close one object at once, kept (its handle goes to the reuse
    # once) or shared (released to the library once: a second release of
    # the handle would raise InvalidHandle in a thread).
    import threading
    n, rounds = 4, 150
    barrier = threading.Barrier(n)
    box = {}
    lib, before = rt.stats(), rt.reuse_stats()

    def work(i):
        for k in range(rounds):
            if i == 0:
                b = rt.alloc(4096)
                if k % 2:
                    b.info()  # shared: released, never kept
                box["b"] = b
            barrier.wait()
            box["b"].close()
            barrier.wait()
    _run_threads(n, work)
    s, now = rt.reuse_stats(), rt.stats()
    # An even round allocates (a miss) and keeps its buffer once; the next
    # round takes it (a hit), shares it, and releases it once.
    half = rounds // 2
    assert s["returned"] - before["returned"] == half and s["kept"] == 0
    assert s["hits"] - before["hits"] == half == s["misses"] - before["misses"]
    assert now["allocations"] - lib["allocations"] == half == now["frees"] - lib["frees"]


# ---- property tests (Hypothesis): accepted exactly when ref_dims accepts

PROP = dict(max_examples=150, deadline=None, database=None, derandomize=True)
NO_HYPOTHESIS = ("hypothesis is not installed: the property tests need it (PyPI; "
                 "bindings/python/tests/install-test-deps build/default/python-test-deps)")


@pytest.fixture(scope="module")
def hrt():
    # Allocations above 16 MiB fail (the fake driver's FAKE_CUDA_MAX_ALLOC;
    # its pinned staging chunks are 8 MiB).
    old = os.environ.get("FAKE_CUDA_MAX_ALLOC")
    os.environ["FAKE_CUDA_MAX_ALLOC"] = str(2**24)
    with t4acuda.Runtime() as r:
        yield r
    if old is None:
        del os.environ["FAKE_CUDA_MAX_ALLOC"]
    else:
        os.environ["FAKE_CUDA_MAX_ALLOC"] = old


if given is None:
    def test_properties_need_hypothesis():
        pytest.skip(NO_HYPOTHESIS)
else:
    EXTENTS = st.one_of(
        st.integers(0, 6), st.integers(0, 6), st.integers(-3, -1),
        st.sampled_from([2**31, 2**32, 2**40, 2**62, 2**63, 2**64]),
        st.booleans(), st.floats(0, 4), st.integers(0, 6).map(np.int64))
    SHAPES = st.one_of(EXTENTS, st.lists(EXTENTS, max_size=4),
                       st.lists(EXTENTS, max_size=4).map(tuple))
    DTYPES = st.sampled_from(ALLOWED_DTYPES + REFUSED_DTYPES)

    @needs_fake
    @settings(**PROP)
    @given(nbytes=st.integers(0, 160), dtype=DTYPES, shape=st.none() | SHAPES)
    def test_property_view(hrt, nbytes, dtype, shape):
        expect = ref_dims(shape, dtype, nbytes)
        with hrt.alloc(nbytes) as buf:
            try:
                v = buf.view(dtype, shape)
            except t4acuda.InvalidArgument:
                assert expect is None, (shape, dtype, nbytes)
                event("refused")
                return
            event("accepted")
            assert expect is not None and v.shape == expect, (shape, dtype, nbytes)
            assert_interface(v, expect, np.dtype(dtype))
            a = v.download()
            assert a.shape == expect and a.dtype == np.dtype(dtype)
            v.close()

    @needs_fake
    @settings(**PROP)
    @given(dtype=DTYPES, shape=SHAPES)
    def test_property_empty(hrt, dtype, shape):
        expect = ref_dims(shape, dtype)
        try:
            b = hrt.empty(shape, dtype)
        except t4acuda.OutOfMemory:
            event("accepted, out of memory")
            assert expect is not None
            assert np.dtype(dtype).itemsize * math.prod(expect) > 2**24
            return
        except t4acuda.InvalidArgument:
            assert expect is None, (shape, dtype)
            event("refused")
            return
        event("accepted")
        assert expect is not None and b.shape == expect, (shape, dtype)
        assert b.nbytes == np.dtype(dtype).itemsize * math.prod(expect)
        assert_interface(b, expect, np.dtype(dtype))
        b.close()

    DL_CODES = {"i": _ffi.kDLInt, "u": _ffi.kDLUInt, "f": _ffi.kDLFloat,
                "b": _ffi.kDLBool, "c": _ffi.kDLComplex}

    @needs_fake
    @needs_dlpack
    @settings(**PROP)
    @given(nbytes=st.integers(0, 96), dtype=st.sampled_from(ALLOWED_DTYPES),
           dims=st.sampled_from([(), (0, 2**62)]) | st.lists(
               st.integers(0, 4) | st.integers(1, 4), min_size=1, max_size=4).map(tuple),
           versioned=st.booleans())
    def test_property_dlpack_export_and_back(hrt, nbytes, dtype, dims, versioned):
        expect = ref_dims(dims, dtype, nbytes)
        with hrt.alloc(nbytes) as buf:
            try:
                v = buf.view(dtype, dims)
            except t4acuda.InvalidArgument:
                assert expect is None
                event("refused")
                return
            assert expect == dims
            if not dims:  # t4a_dlpack_desc's ndim 0 is 1-D over the buffer
                with pytest.raises(BufferError, match="0-d"):
                    v.__dlpack__(stream=-1, max_version=(1, 0) if versioned else None)
                event("0-d, not exported")
                return v.close()
            event("accepted")
            cap = v.__dlpack__(stream=-1, max_version=(1, 0) if versioned else None)
            name = b"dltensor_versioned" if versioned else b"dltensor"
            ptr = _dlpack._GetPointerObj(cap, name)
            t = ctypes.cast(ptr, _dlpack._PV if versioned else _dlpack._PL).contents.dl_tensor
            assert tuple(t.shape[i] for i in range(t.ndim)) == dims
            assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (
                DL_CODES[dtype.kind], dtype.itemsize * 8, 1)
            assert (t.device.device_type, (t.data or 0) + t.byte_offset) == (
                _ffi.kDLCUDA, v.device_pointer)
            if t.strides:
                step = 1
                for i in reversed(range(t.ndim)):
                    assert dims[i] <= 1 or 0 in dims or t.strides[i] == step
                    step *= dims[i]
            assert t.byte_offset + dtype.itemsize * math.prod(dims) <= nbytes
            del t, cap
            back = hrt.from_dlpack(v)
            assert (back.shape, back.dtype) == (dims, dtype)
            assert back.nbytes == dtype.itemsize * math.prod(dims)
            assert_interface(back, dims, dtype)
            back.close()
            v.close()

    # DLPack (code, bits) -> the NumPy dtype a from_dlpack import gets;
    # any other valid DLPack dtype imports as bytes.
    NUMPY_OF = {(c, 8 * d.itemsize): d for d in ALLOWED_DTYPES
                for c in [DL_CODES[d.kind]]}
    DL_DTYPES = st.sampled_from(
        [(c, b, 1) for (c, b) in NUMPY_OF] +
        [(2, 128, 1), (6, 32, 1), (4, 16, 1), (3, 64, 1), (2, 32, 2), (0, 4, 2),
         (0, 24, 1), (2, 24, 1), (0, 0, 1), (0, 12, 1), (7, 32, 1)])

    def ref_import(shape, strides, dtype, backing):
        """(dtype, shape, nbytes) of a from_dlpack import of a tensor over
        `backing` bytes, or None where it is refused."""
        code, bits, lanes = dtype
        if any(d < 0 for d in shape):
            return None
        if strides is not None and 0 not in shape:
            step = 1
            for d, s in zip(reversed(shape), reversed(strides)):
                if d != 1 and s != step:
                    return None  # a Buffer has no strides
                step *= d
        if code > 6 or bits * lanes == 0 or bits * lanes % 8:
            return None
        nbytes = math.prod(shape) * bits * lanes // 8
        if nbytes > backing:
            return None
        dt = NUMPY_OF.get((code, bits)) if lanes == 1 else None
        if dt is None:
            return np.dtype(np.uint8), (nbytes,), nbytes
        if ref_dims(shape, dt) is None:
            return None
        return dt, tuple(shape), nbytes

    @needs_fake
    @needs_dlpack
    @settings(**PROP)
    @given(shape=st.lists(st.one_of(st.integers(-1, 4), st.integers(1, 3),
                                    st.just(2**40)), max_size=3),
           strides=st.none() | st.lists(st.integers(-2, 13), min_size=3, max_size=3),
           dtype=DL_DTYPES, compact=st.booleans())
    def test_property_from_dlpack(hrt, shape, strides, dtype, compact):
        backing = 128
        if strides is not None:
            strides = strides[:len(shape)]
            if compact:  # C-order strides, so both cases come often
                strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
        expect = ref_import(shape, strides, dtype, backing)
        with hrt.alloc(backing) as mem:
            p = _AnyProducer(mem.device_pointer, shape, strides, dtype)
            try:
                b = t4acuda.from_dlpack(p, runtime=hrt)
            except (t4acuda.Error, BufferError):
                assert expect is None, (shape, strides, dtype)
                event("refused")
            else:
                assert expect is not None, (shape, strides, dtype)
                event("accepted as bytes" if expect[0] == np.uint8 and dtype[1] != 8
                      else "accepted")
                assert (b.dtype, b.shape, b.nbytes) == expect
                assert_interface(b, expect[1], expect[0])
                b.close()
            gc.collect()
            hrt.synchronize()
            assert p.calls == 1
