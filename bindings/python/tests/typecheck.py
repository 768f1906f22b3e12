"""The type check of the Python package (ctest python_typecheck, label
bindings): mypy, at the version tests/install-test-deps pins, with the
[tool.mypy] settings of bindings/python/pyproject.toml (strict).

1. The package sources (src/t4acuda) and tests/typecheck_usage.py, a
   typical program using the API, must check clean.
2. tests/typecheck_wrong.py must fail the check with exactly the errors
   its `# E: <code>` comments mark (so the check can fail, and the types
   it relies on are not Any).

mypy is imported from PYTHONPATH (<build dir>/python-test-deps, where
install-test-deps puts it). Without it the test is skipped (exit 77),
except under CI (CI set, not "false" or "0"), where it fails.

Run by T4A_PYTHON: python3 typecheck.py [--cache-dir DIR]."""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)  # bindings/python
SKIP = 77  # ctest SKIP_RETURN_CODE (tests/CMakeLists.txt)
ERROR_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<msg>.*?)"
                        r"(?:  \[(?P<code>[a-z-]+)\])?$")


def in_ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pinned_version():
    with open(os.path.join(HERE, "install-test-deps"), encoding="utf-8") as f:
        m = re.search(r"^MYPY_VERSION=(\S+)$", f.read(), re.M)
    return m.group(1) if m else None


def run_mypy(api, cache_dir, *files):
    args = ["--config-file", os.path.join(PKG, "pyproject.toml"),
            "--cache-dir", cache_dir, "--no-error-summary", "--show-error-codes",
            "--no-pretty", "--hide-error-context", "--no-color-output",
            os.path.join(PKG, "src", "t4acuda"), *files]
    out, err, status = api.run(args)
    return out + err, status


def expected_errors(path):
    """{line: code} of the `# E: code` marks of `path`."""
    marks = {}
    with open(path, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"#\s*E:\s*([a-z-]+)\s*$", text)
            if m:
                marks[n] = m.group(1)
    return marks


def reported_errors(output, path):
    """{line: code} of mypy's errors in `path`, and its other error lines."""
    got, other = {}, []
    name = os.path.basename(path)
    for text in output.splitlines():
        m = ERROR_LINE.match(text)
        if not m:
            continue
        if os.path.basename(m.group("file")) == name:
            got[int(m.group("line"))] = m.group("code") or "?"
        else:
            other.append(text)
    return got, other


def main(argv):
    cache_dir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "t4acuda-mypy-cache")
    if len(argv) == 3 and argv[1] == "--cache-dir":
        cache_dir = argv[2]
    try:
        import mypy.api as api
        from mypy.version import __version__ as version
    except ImportError:
        what = ("mypy is not installed: the type check needs it (PyPI; "
                "bindings/python/tests/install-test-deps build/default/python-test-deps)")
        if in_ci():
            print(f"FAIL: {what}; CI={os.environ.get('CI')!r} requires the type check")
            return 1
        print(f"SKIP: {what}")
        return SKIP
    pin = pinned_version()
    print(f"mypy {version} (pinned: {pin}) under {sys.executable} {sys.version.split()[0]}")
    if pin and version != pin:
        print(f"note: mypy {version} is not the pinned {pin}; results may differ")
    failed = False

    usage = os.path.join(HERE, "typecheck_usage.py")
    out, status = run_mypy(api, cache_dir, usage)
    if status != 0 or any(ERROR_LINE.match(t) for t in out.splitlines()):
        print(f"FAIL: the package and {os.path.basename(usage)} must type-check "
              f"(mypy exit {status}):\n{out}")
        failed = True
    else:
        print("ok: src/t4acuda and typecheck_usage.py type-check clean")

    wrong = os.path.join(HERE, "typecheck_wrong.py")
    want = expected_errors(wrong)
    out, status = run_mypy(api, cache_dir, wrong)
    got, other = reported_errors(out, wrong)
    if not want or status != 1 or got != want or other:
        print(f"FAIL: {os.path.basename(wrong)} must fail the check with exactly its "
              f"marked errors (mypy exit {status})")
        for line in sorted(set(want) | set(got)):
            if want.get(line) != got.get(line):
                print(f"  line {line}: marked {want.get(line)}, mypy reported "
                      f"{got.get(line)}")
        for text in other:
            print(f"  elsewhere: {text}")
        print(out)
        failed = True
    else:
        print(f"ok: typecheck_wrong.py fails the check with its {len(want)} marked errors:")
        print(out.rstrip())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
