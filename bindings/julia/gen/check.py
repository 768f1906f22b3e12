#!/usr/bin/env python3
"""Checks the Julia package's generated wrappers mechanically (there is no
Julia toolchain to run them).

  check.py [--layouts FILE] [--generated FILE] [--library LIB] [--nm NM]

1. staleness: the committed src/generated.jl equals what generate.py makes
   from the layouts file now;
2. coverage: every function of the layouts file, and every t4a_* symbol the
   built library exports (`nm -D --defined-only`, when --library is given;
   the t4a_testing_* seam of test builds is left out, as in the release
   check), has exactly one wrapper, and no wrapper names a function that
   does not exist;
3. types, read back from generated.jl with its own parser (not through the
   generator): each ccall's argument and return types equal the Julia
   spelling of the C types in the layouts file; each struct's fields (by
   name and type) sit at the offsets of the layouts file, with size and
   alignment computed from the Julia field types by the C rules; every
   constant and enum value is there with its value.

Every failure is printed with what it names; exit status 1 if any.
"""

import argparse
import difflib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import generate  # noqa: E402  (staleness only: the other checks do not use it)

# C scalar spellings -> Julia (the check's own table).
C_TO_JL = {
    "uint8_t": "UInt8", "int8_t": "Int8", "uint16_t": "UInt16", "int16_t": "Int16",
    "uint32_t": "UInt32", "int32_t": "Int32", "uint64_t": "UInt64", "int64_t": "Int64",
    "size_t": "Csize_t", "char": "Cchar", "void": "Cvoid", "float": "Float32",
    "double": "Float64",
}
KIND_TO_JL = {"u8": "UInt8", "i8": "Int8", "u16": "UInt16", "i16": "Int16", "u32": "UInt32",
              "i32": "Int32", "u64": "UInt64", "i64": "Int64", "string": "String"}
# Julia sizes and alignments (64-bit Linux), the C rules applied to them.
PRIM = {"UInt8": 1, "Int8": 1, "Cchar": 1, "UInt16": 2, "Int16": 2, "UInt32": 4, "Int32": 4,
        "Float32": 4, "UInt64": 8, "Int64": 8, "Csize_t": 8, "Float64": 8, "Cstring": 8}

WRAPPER = re.compile(
    r"^(?P<fn>\w+)\((?P<names>[^)]*)\) =\n"
    r"    ccall\(\(:(?P<sym>\w+), libt4acuda\), (?P<ret>[^,]+(?:\{[^}]*\})?), "
    r"\((?P<args>.*?)\)(?P<pass>(?:, \w+)*)\)$", re.M)
STRUCT = re.compile(r"^# C (?P<c>[\w ]+?): [^\n]*\n(?P<kw>mutable struct|struct) (?P<jl>\w+)\n"
                    r"(?P<body>(?:    [^\n]*\n)*?)end$", re.M)
FIELD = re.compile(r"^    (?P<name>\w+)::(?P<type>[^\s#]+(?: [^\s#]+)*?)\s*(?:#.*)?$")
CONST = re.compile(r"^const (?P<name>\w+) = (?P<val>.+?)(?:\s*#.*)?$", re.M)


def split_top(s):
    """Splits 'A, Ptr{B}, NTuple{2, C}' at top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


class Expect:
    """The Julia spelling the C types must have, from the layouts file."""

    def __init__(self, doc, jl_names):
        self.doc = doc
        self.jl_names = jl_names  # C struct name -> Julia struct name (from generated.jl)
        self.typedefs = {t["name"]: t for t in doc.get("typedefs", [])}
        self.enums = {e["typedef"] for e in doc.get("enums", []) if e.get("typedef")}

    def c(self, c_type, ctx):
        t = re.sub(r"\s+", " ", c_type.strip())
        if t.endswith("*") or t.endswith("*const") or t.endswith("* const"):
            inner = re.sub(r"\s*\*\s*(const)?$", "", t)
            if ctx in ("arg", "ret") and inner == "const char":  # NUL-terminated input
                return "Cstring"
            return "Ptr{%s}" % self.c(inner, "inner")
        m = re.match(r"^(.*?)\s*\[[^\]]*\]$", t)
        if m:
            raise ValueError("array type %s needs its count" % t)
        base = re.sub(r"\bconst\b|\bstruct\b|\benum\b", "", t).strip()
        if base in C_TO_JL:
            return C_TO_JL[base]
        if base in self.jl_names:
            return self.jl_names[base]
        if base in self.typedefs:
            td = self.typedefs[base]
            if td["kind"] == "fnptr":
                return "Ptr{Cvoid}"
            return self.c(td["c_type"], ctx)
        if base in self.enums:
            return "Int32"
        if "(*" in t:
            return "Ptr{Cvoid}"  # a function pointer spelled in place
        raise ValueError("C type '%s' unknown to check.py" % c_type)

    def field(self, f):
        if f["kind"] == "array":
            m = re.match(r"^(.*?)\s*\[[^\]]*\]$", f["c_type"])
            return "NTuple{%d, %s}" % (f["count"], self.c(m.group(1), "inner"))
        if f["kind"] == "fnptr":
            return "Ptr{Cvoid}"
        return self.c(f["c_type"], "field")


def jl_layout(t, structs):
    if t in PRIM:
        return PRIM[t], PRIM[t]
    if t.startswith("Ptr{"):
        return 8, 8
    m = re.match(r"^NTuple\{(\d+),\s*(.*)\}$", t)
    if m:
        s, a = jl_layout(m.group(2), structs)
        return int(m.group(1)) * s, a
    if t in structs:
        return structs[t]
    raise ValueError("Julia type %s has no known layout" % t)


def check(layouts_path, generated_path, library, nm):
    fails = []
    fail = fails.append
    with open(layouts_path) as f:
        doc = json.load(f)
    with open(generated_path) as f:
        text = f.read()
    rel = os.path.relpath(generated_path, ROOT)

    # 1. staleness
    try:
        fresh = generate.generate(doc)
    except generate.GenError as e:
        fresh = None
        fail("generate.py cannot generate from %s: %s" % (layouts_path, e))
    if fresh is not None and fresh != text:
        diff = list(difflib.unified_diff(fresh.splitlines(), text.splitlines(),
                                         "fresh generation", rel, lineterm="", n=1))
        fail("%s is stale (differs from a fresh generation; regenerate with "
             "python3 bindings/julia/gen/generate.py):\n%s" % (rel, "\n".join(diff[:40])))

    # parse the structs back
    jl_names, parsed = {}, {}
    for m in STRUCT.finditer(text):
        c = m.group("c").strip()
        if m.group("kw") != "struct":
            fail("struct %s (%s) is mutable; it must be an immutable isbits struct"
                 % (m.group("jl"), c))
        fields = []
        for line in m.group("body").splitlines():
            fm = FIELD.match(line)
            if not fm:
                fail("struct %s: cannot read field line %r" % (m.group("jl"), line))
                continue
            fields.append((fm.group("name"), fm.group("type").strip()))
        if c in jl_names:
            fail("C struct %s has two Julia structs" % c)
        jl_names[c] = m.group("jl")
        parsed[m.group("jl")] = (c, fields)

    expect = Expect(doc, jl_names)

    # 3b. struct layouts (C alignment rules over the Julia field types)
    layouts = {}  # Julia name -> (size, align), in definition order
    by_name = {s["name"]: s for s in doc["structs"]}
    for jl, (c, fields) in parsed.items():
        s = by_name.get(c)
        if s is None:
            fail("struct %s (C %s) is in %s but not in layouts.json" % (jl, c, rel))
            continue
        off, align, placed = 0, 1, []
        for name, t in fields:
            try:
                fs, fa = jl_layout(t, layouts)
            except ValueError as e:
                fail("struct %s field %s: %s" % (c, name, e))
                fs, fa = 0, 1
            off = (off + fa - 1) // fa * fa
            placed.append((name, t, off, fs))
            off += fs
            align = max(align, fa)
        size = (off + align - 1) // align * align
        layouts[jl] = (size, align)
        real = [p for p in placed if not re.match(r"^_pad\d+$", p[0])]
        cf = s["fields"]
        if [p[0].rstrip("_") for p in real] != [f["name"] for f in cf]:
            fail("struct %s: Julia fields %s, layouts.json fields %s"
                 % (c, [p[0] for p in real], [f["name"] for f in cf]))
        for (name, t, o, fs), f in zip(real, cf):
            where = "struct %s field %s" % (c, f["name"])
            if o != f["offset"]:
                fail("%s: offset %d in Julia (%s), %d in layouts.json" % (where, o, t, f["offset"]))
            if fs != f["size"]:
                fail("%s: size %d in Julia (%s), %d in layouts.json" % (where, fs, t, f["size"]))
            try:
                want = expect.field(f)
                if t != want:
                    fail("%s: Julia type %s, C %s wants %s" % (where, t, f["c_type"], want))
            except ValueError as e:
                fail("%s: %s" % (where, e))
        if size != s["size"] or align != s["align"]:
            fail("struct %s: size %d align %d in Julia, %d align %d in layouts.json"
                 % (c, size, align, s["size"], s["align"]))
        if s.get("handle") and fields != [("id", "UInt64")]:
            fail("handle %s: must be exactly `id::UInt64`" % c)
    for s in doc["structs"]:
        if s["name"] not in jl_names:
            fail("struct %s has no Julia struct in %s" % (s["name"], rel))

    # 2 and 3a. wrappers
    wrappers = {}
    for m in WRAPPER.finditer(text):
        fn, sym = m.group("fn"), m.group("sym")
        if fn != sym:
            fail("wrapper %s calls symbol %s" % (fn, sym))
        if sym in wrappers:
            fail("function %s has two wrappers" % sym)
        wrappers[sym] = m
    declared = {fn["name"]: fn for fn in doc["functions"]}
    for name, fn in declared.items():
        m = wrappers.get(name)
        if m is None:
            fail("function %s (layouts.json) has no wrapper in %s" % (name, rel))
            continue
        try:
            want_ret = expect.c(fn["returns"]["c_type"], "ret")
            want = [("Ptr{Cvoid}" if p["kind"] == "fnptr" else expect.c(p["c_type"], "arg"))
                    for p in fn["params"]]
        except ValueError as e:
            fail("function %s: %s" % (name, e))
            continue
        if m.group("ret").strip() != want_ret:
            fail("function %s: returns %s in Julia, C %s wants %s"
                 % (name, m.group("ret").strip(), fn["returns"]["c_type"], want_ret))
        got = split_top(m.group("args"))
        if len(got) != len(want):
            fail("function %s: %d argument types in Julia, %d in C"
                 % (name, len(got), len(want)))
        for i, (g, w, p) in enumerate(zip(got, want, fn["params"])):
            if g != w:
                fail("function %s: argument %d (%s) is %s in Julia, C %s wants %s"
                     % (name, i + 1, p["name"], g, p["c_type"], w))
        names = split_top(m.group("names"))
        passed = split_top(m.group("pass").lstrip(", "))
        if names != passed or len(names) != len(want):
            fail("function %s: parameters %s, passed %s" % (name, names, passed))
    for name in wrappers:
        if name not in declared:
            fail("wrapper %s names no function of layouts.json" % name)
    if "(:" in text and len(wrappers) != text.count("ccall((:"):
        fail("%s has %d ccall lines but %d read as wrappers (a malformed wrapper?)"
             % (rel, text.count("ccall((:"), len(wrappers)))

    if library:
        try:
            out = subprocess.run([nm, "-D", "--defined-only", library], check=True,
                                 stdout=subprocess.PIPE, universal_newlines=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            fail("cannot list the exports of %s with %s: %s" % (library, nm, e))
            out = ""
        exported = set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "TtWiI" and parts[2].startswith("t4a_"):
                exported.add(parts[2].split("@")[0])
        if not exported and out:
            fail("%s exports no t4a_* function" % library)
        for sym in sorted(exported):
            if sym.startswith("t4a_testing_"):
                continue  # the test-only seam (T4A_TESTING builds), never installed
            if sym not in wrappers:
                fail("exported function %s has no wrapper in %s%s" % (
                    sym, rel, "" if sym in declared else
                    " (nor an entry in layouts.json: regenerate it with abi/update-layouts)"))

    # 3c. constants and enum values
    consts = {m.group("name"): m.group("val").strip() for m in CONST.finditer(text)}
    want_consts = [(c["name"], c["kind"], c["value"]) for c in doc.get("constants", [])]
    for e in doc.get("enums", []):
        want_consts += [(v["name"], "i32", v["value"]) for v in e["values"]]
    for name, kind, value in want_consts:
        jt = KIND_TO_JL.get(kind)
        want = json.dumps(value) if kind == "string" else "%s(%d)" % (jt, value) if jt else None
        if want is None:
            fail("constant %s: kind %s unknown to check.py" % (name, kind))
        elif consts.get(name) != want:
            fail("constant %s: %s in Julia, layouts.json says %s" % (name, consts.get(name), want))

    return fails, len(wrappers), len(parsed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layouts", default=generate.LAYOUTS)
    ap.add_argument("--generated", default=generate.OUTPUT)
    ap.add_argument("--library", help="the built libt4acuda.so, for its exports")
    ap.add_argument("--nm", default="nm")
    a = ap.parse_args()
    try:
        fails, nw, ns = check(a.layouts, a.generated, a.library, a.nm)
    except (OSError, ValueError, KeyError) as e:
        print("julia check: FAIL: %s" % e)
        return 1
    for f in fails:
        print("julia check: FAIL: %s" % f)
    if fails:
        print("julia check: %d failure(s)" % len(fails))
        return 1
    print("julia check: OK: %d wrappers, %d structs match %s%s" % (
        nw, ns, os.path.relpath(a.layouts, ROOT),
        " and the exports of %s" % os.path.basename(a.library) if a.library else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
