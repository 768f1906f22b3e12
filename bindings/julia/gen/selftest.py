#!/usr/bin/env python3
"""Proves check.py can fail: plants one mismatch at a time in temporary
copies of src/generated.jl or abi/layouts.json and expects check.py to fail
with a message naming it (and to pass on the untouched files).

  selftest.py [--library LIB] [--nm NM]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate  # noqa: E402


def run_check(layouts, generated, library, nm):
    cmd = [sys.executable, os.path.join(HERE, "check.py"), "--layouts", layouts,
           "--generated", generated, "--nm", nm]
    if library:
        cmd += ["--library", library]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    return p.returncode, p.stdout


def replace_once(text, old, new, what):
    if text.count(old) != 1:
        raise SystemExit("selftest: cannot plant %s: %r occurs %d times in generated.jl"
                         % (what, old, text.count(old)))
    return text.replace(old, new)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--library")
    ap.add_argument("--nm", default="nm")
    a = ap.parse_args()
    with open(generate.OUTPUT) as f:
        jl = f.read()
    with open(generate.LAYOUTS) as f:
        layouts = json.load(f)

    def layouts_with(change):
        doc = json.loads(json.dumps(layouts))
        change(doc)
        return doc

    def move_field(doc):
        s = next(s for s in doc["structs"] if s["name"] == "t4a_runtime_options")
        f = next(f for f in s["fields"] if f["name"] == "staging_bytes")
        f["offset"] += 4

    def retype_param(doc):
        fn = next(f for f in doc["functions"] if f["name"] == "t4a_buffer_fill")
        p = next(p for p in fn["params"] if p["name"] == "value")
        p.update(c_type="uint32_t", kind="u32")

    kernel_get = ("t4a_kernel_get(module_, name, kernel) =\n"
                  "    ccall((:t4a_kernel_get, libt4acuda), Int32, (T4aModule, Cstring, "
                  "Ptr{Kernel}), module_, name, kernel)\n")
    cases = [
        # (what, generated.jl text, layouts doc, expected message fragments)
        ("a wrong argument type (bytes of t4a_buffer_alloc as UInt32)",
         replace_once(jl, "(Runtime, UInt64, UInt32, Ptr{Buffer})",
                      "(Runtime, UInt32, UInt32, Ptr{Buffer})", "argument type"),
         None, ["function t4a_buffer_alloc: argument 2 (bytes) is UInt32 in Julia"]),
        ("a wrong return type (t4a_version returning Int32)",
         replace_once(jl, "ccall((:t4a_version, libt4acuda), UInt32, ())",
                      "ccall((:t4a_version, libt4acuda), Int32, ())", "return type"),
         None, ["function t4a_version: returns Int32 in Julia"]),
        ("a missing wrapper (t4a_kernel_get deleted)",
         replace_once(jl, kernel_get, "", "missing wrapper"), None,
         ["function t4a_kernel_get (layouts.json) has no wrapper"]
         + (["exported function t4a_kernel_get has no wrapper"] if a.library else [])),
        ("a field type changed in generated.jl (pool_release_threshold as UInt32)",
         replace_once(jl, "    pool_release_threshold::UInt64  # offset 8, C uint64_t\n"
                      "    staging_bytes::",
                      "    pool_release_threshold::UInt32  # offset 8, C uint64_t\n"
                      "    staging_bytes::", "field type"),
         None, ["struct t4a_runtime_options field pool_release_threshold: size 4 in Julia",
                "struct t4a_runtime_options field pool_release_threshold: Julia type UInt32, C "
                "uint64_t wants UInt64", "is stale"]),
        ("a field offset changed in a copy of layouts.json (staging_bytes +4)",
         jl, layouts_with(move_field),
         ["struct t4a_runtime_options field staging_bytes: offset 16 in Julia (UInt64), "
          "20 in layouts.json", "generate.py cannot generate"]),
        ("a parameter type changed in a copy of layouts.json (t4a_buffer_fill value)",
         jl, layouts_with(retype_param),
         ["function t4a_buffer_fill: argument 5 (value) is UInt8 in Julia, C uint32_t wants "
          "UInt32", "is stale"]),
        ("a stale constant (T4A_ARG_SCALAR changed in generated.jl)",
         replace_once(jl, "const T4A_ARG_SCALAR = UInt32(2)", "const T4A_ARG_SCALAR = UInt32(7)",
                      "constant"),
         None, ["constant T4A_ARG_SCALAR: UInt32(7) in Julia", "is stale"]),
    ]

    tmp = tempfile.mkdtemp(prefix="t4a_julia_selftest.")
    failures = 0
    try:
        gpath = os.path.join(tmp, "generated.jl")
        lpath = os.path.join(tmp, "layouts.json")
        shutil.copyfile(generate.OUTPUT, gpath)
        shutil.copyfile(generate.LAYOUTS, lpath)
        rc, out = run_check(lpath, gpath, a.library, a.nm)
        if rc != 0:
            print("selftest: FAIL: check.py fails on the untouched copies:\n" + out)
            failures += 1
        else:
            print("selftest: ok: untouched copies pass")
        for what, text, doc, expect in cases:
            with open(gpath, "w") as f:
                f.write(text)
            with open(lpath, "w") as f:
                json.dump(doc if doc is not None else layouts, f)
            rc, out = run_check(lpath, gpath, a.library, a.nm)
            missing = [e for e in expect if e not in out]
            if rc == 0 or missing:
                failures += 1
                print("selftest: FAIL: %s: check.py exit %d, missing %s; its output:\n%s"
                      % (what, rc, missing, out))
            else:
                print("selftest: ok: %s fails, naming it" % what)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("selftest: %d case(s) failed" % failures)
        return 1
    print("selftest: all %d planted mismatches caught" % len(cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
