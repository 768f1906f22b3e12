"""Runs an example with one process per GPU under torchrun (the ctest entry
of examples/allreduce_nccl_ranks.cpp and examples/allreduce_torch.py).

    launch_ranks.py RANKS PROGRAM [ARGS...]

PROGRAM ending in .py runs with this interpreter; any other PROGRAM runs
as is (torchrun --no_python) with a fresh directory for the NCCL id
appended to ARGS. Before anything starts, the GPUs are counted through
t4acuda (PYTHONPATH and T4ACUDA_LIBRARY as for the bindings): with fewer
than RANKS devices, or no driver, it prints SKIPPED and exits 77, or
fails when T4A_REQUIRE_GPU asks for that many devices (the GPU lane's
rule, tests/support/gpu_support.c). Without PyTorch (torchrun) it skips:
the launcher is missing, not a GPU. Otherwise it exits with torchrun's
status (a 77 from there is a failure: a rank skipped after the check).
"""
import os
import shutil
import subprocess
import sys
import tempfile


def required_devices():
    raw = os.environ.get("T4A_REQUIRE_GPU", "")
    if raw in ("", "0"):
        return 0, raw
    try:
        return int(raw), raw
    except ValueError:
        return 1, raw


def skip_or_fail(reason, ranks):
    need, raw = required_devices()
    if need >= ranks:
        print(f"FAILED: {reason}, and T4A_REQUIRE_GPU={raw} requires {need} device(s)",
              file=sys.stderr)
        return 1
    print(f"SKIPPED: {reason}")
    return 77


def main(argv):
    if len(argv) < 3 or not argv[1].isdigit() or int(argv[1]) < 1:
        print("usage: launch_ranks.py RANKS PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    ranks, program, args = int(argv[1]), argv[2], argv[3:]
    try:
        import torch.distributed.run  # noqa: F401  (the launcher)
    except ImportError as e:
        print(f"SKIPPED: torchrun is not available ({e})")
        return 77
    import t4acuda
    try:
        count = t4acuda.device_count()
    except t4acuda.NoDriver as e:
        return skip_or_fail(f"no usable CUDA driver ({e})", ranks)
    if count < ranks:
        return skip_or_fail(f"{ranks} ranks need {ranks} CUDA devices; the driver "
                            f"reports {count}", ranks)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={ranks}"]
    id_dir = None
    if program.endswith(".py"):
        cmd += [program] + args
    else:
        id_dir = tempfile.mkdtemp(prefix="t4acuda-ranks-")
        cmd += ["--no_python", program] + args + [id_dir]
    print("+ " + " ".join(cmd), flush=True)
    try:
        rc = subprocess.run(cmd, timeout=280).returncode
    except subprocess.TimeoutExpired:
        print("FAILED: torchrun did not finish in 280 s", file=sys.stderr)
        return 1
    finally:
        if id_dir is not None:
            left = os.listdir(id_dir)
            if left:
                print(f"FAILED: the NCCL id was not removed: {left}", file=sys.stderr)
                rc = 1
            shutil.rmtree(id_dir, ignore_errors=True)
    if rc == 77:
        print("FAILED: a rank skipped after the GPU check", file=sys.stderr)
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
