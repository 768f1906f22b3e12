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


def docs_example(page, name):
    """The Python block of docs/<page> whose first line is
    `# docs-example: <name>`, as written there (so the docs run as shown)."""
    text = (SOURCE_DIR / "docs" / page).read_text()
    marker = f"# docs-example: {name}\n"
    for block in text.split("```python\n")[1:]:
        code = block.split("```", 1)[0]
        if code.startswith(marker):
            return code
    raise AssertionError(f"docs/{page} has no Python block '{marker.strip()}'")


@pytest.fixture(scope="session")
def run_docs_example():
    """Runs a docs example in a fresh namespace; returns the namespace."""
    def run(page, name):
        code = docs_example(page, name)
        namespace = {"__name__": f"docs_example_{name.replace('-', '_')}"}
        exec(compile(code, f"docs/{page}:{name}", "exec"), namespace)
        return namespace
    return run
