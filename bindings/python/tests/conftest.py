"""Shared fixtures. The host tests (test_host.py) run on the fake libcuda
of tests/fake (T4A_CUDA_DRIVER_PATH, set by ctest); the GPU tests
(test_gpu.py) on the real driver of the GPU machine."""

import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get(
    "T4A_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3]))


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE_DIR
