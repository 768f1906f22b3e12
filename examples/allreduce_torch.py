"""torch.distributed (NCCL backend) over t4acuda buffers, one process per GPU.

    torchrun --standalone --nproc_per_node=2 examples/allreduce_torch.py

Each process makes one t4acuda runtime on device LOCAL_RANK and fills a
buffer with a t4acuda kernel. torch.from_dlpack views that buffer without a
copy (the tensor's data pointer is the buffer's device address; checked),
and the DLPack exchange makes torch's current stream wait for the kernel.
dist.all_reduce sums the tensor across the ranks on torch's side; then
t4acuda.from_dlpack hands the tensor back to the runtime, which makes the
runtime's stream wait for torch's stream (so for the collective), and a
second t4acuda kernel scales the sum in place. No host synchronization
orders the three steps: only streams. The result is checked exactly
against the CPU.

Exit 0 on success, 1 on a mismatch (an exception otherwise).
"""
import os
import sys

import numpy as np
import torch
import torch.distributed as dist

import t4acuda

SOURCE = r"""
extern "C" __global__ void fill(float *x, float rank, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = float(i % 1000u) + 1000.0f * rank;
}
extern "C" __global__ void scale(float *x, float a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
"""


def main():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    n = (1 << 22) + 3  # 16 MiB + 12 bytes per rank
    torch.cuda.set_device(local)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")  # one process, no launcher
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("nccl", rank=rank, world_size=world)
    try:
        with t4acuda.Runtime(device=local) as rt:
            module = rt.load(t4acuda.compile(SOURCE, runtime=rt))
            fill, scale = module.kernel("fill"), module.kernel("scale")
            grid = (n + 255) // 256
            buf = rt.empty(n, dtype="float32")
            fill.launch(grid, 256, buf, t4acuda.f32(rank), t4acuda.u32(n))

            tensor = torch.from_dlpack(buf)  # torch's stream waits for fill
            if tensor.data_ptr() != buf.device_pointer:
                raise RuntimeError(f"torch.from_dlpack copied: {tensor.data_ptr():#x} "
                                   f"is not the buffer's {buf.device_pointer:#x}")
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)

            back = t4acuda.from_dlpack(tensor, runtime=rt)  # rt waits for torch
            if back.device_pointer != buf.device_pointer:
                raise RuntimeError("t4acuda.from_dlpack did not view the same memory")
            scale.launch(grid, 256, back, t4acuda.f32(0.5), t4acuda.u32(n))
            got = back.download()

            i = np.arange(n, dtype=np.int64)
            want = ((world * (i % 1000) + 1000 * world * (world - 1) // 2) * 0.5)
            want = want.astype(np.float32)
            bad = np.flatnonzero(got != want)
            if bad.size:
                j = int(bad[0])
                print(f"FAILED: rank {rank}: {bad.size} mismatches; element {j} is "
                      f"{got[j]}, expected {want[j]}", file=sys.stderr)
                return 1
            del tensor
            back.close()
            buf.close()
            print(f"rank {rank} of {world} (device {local}): torch.distributed NCCL "
                  f"all-reduce of {n} floats on t4acuda buffers through DLPack, "
                  "kernels before and after ordered by streams, exact")
            return 0
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
