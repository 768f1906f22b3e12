"""Wrong uses of t4acuda that the type check must refuse: ctest
python_typecheck (tests/typecheck.py) runs mypy on this file and passes
only when mypy reports exactly the errors marked `# E: <code>`, each on
its line, and no other. Each would also fail at run time; a type of the
API that went Any (untyped) would let its line through and fail the test.
Never imported or run."""

from __future__ import annotations

import numpy as np

import t4acuda


def wrong(rt: t4acuda.Runtime, k: t4acuda.Kernel, buf: t4acuda.Buffer) -> None:
    rt.alloc("1024")  # E: arg-type
    k.launch(4, 256, buf, 2.0)  # E: arg-type
    t4acuda.f32("2.0")  # E: arg-type
    t4acuda.compile("", output="sass")  # E: arg-type
    buf.nbytes = 64  # E: misc
    size: str = buf.nbytes  # E: assignment
    data: bytes = buf.download()  # E: assignment
    rt.empty((4, 4), dtype=np.float32).upload_host(buf)  # E: arg-type
    rt.load_data(buf.nbytes)  # E: arg-type
    k.launch(4, 256, buf, shared="0")  # E: arg-type
    k.launch(4, 256, buf, cluster=(1, 1, 1, 1))  # E: arg-type
    k.launch(4, 256, buf, cluster=1.5)  # E: arg-type
    blocks: str = k.cluster_occupancy(4, 256, cluster=2).max_cluster_size  # E: assignment
    t4acuda.Runtime(stream_priority="-1")  # E: arg-type
    try:
        pass
    except t4acuda.NoSuchStatus:  # E: attr-defined
        pass
    except t4acuda.Compile as e:
        line: int = e.log  # E: assignment
    rt.lanch()  # E: attr-defined
