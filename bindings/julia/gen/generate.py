#!/usr/bin/env python3
"""Generates bindings/julia/T4aCuda/src/generated.jl from abi/layouts.json.

abi/layouts.json (made from the C headers by abi/gen-layouts, and checked
against them by the abi_layouts_current test) is the single source: every
struct with its field offsets, every enum, constant and function signature.
This script turns it into Julia: one isbits struct per C struct (explicit
padding fields where C has padding; the layout is verified while
generating), constants, and one `ccall` wrapper per exported function with
the exact argument and return types.

  generate.py                 write src/generated.jl
  generate.py --stdout        print it instead
  generate.py --layouts FILE  read another layouts file (the self-test uses
                              this with a planted mismatch)

Anything the generator does not know (a new kind, a C type it cannot map, a
layout it cannot reproduce) stops it with a message naming the entry; it
never guesses.
"""

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
LAYOUTS = os.path.join(ROOT, "abi", "layouts.json")
OUTPUT = os.path.join(ROOT, "bindings", "julia", "T4aCuda", "src", "generated.jl")

# layouts.json scalar kinds -> Julia types (exact widths).
SCALARS = {
    "u8": "UInt8", "i8": "Int8", "u16": "UInt16", "i16": "Int16",
    "u32": "UInt32", "i32": "Int32", "u64": "UInt64", "i64": "Int64",
    "usize": "Csize_t", "char": "Cchar", "void": "Cvoid",
    "f32": "Float32", "f64": "Float64",
}
# C spellings of the same scalars (inside pointer and array types).
C_SCALARS = {
    "uint8_t": "UInt8", "int8_t": "Int8", "uint16_t": "UInt16", "int16_t": "Int16",
    "uint32_t": "UInt32", "int32_t": "Int32", "uint64_t": "UInt64", "int64_t": "Int64",
    "size_t": "Csize_t", "char": "Cchar", "void": "Cvoid", "float": "Float32",
    "double": "Float64",
}
# Julia sizes/alignments of the scalars (x86-64 / aarch64 Linux, LP64).
JL_SIZE = {"UInt8": 1, "Int8": 1, "Cchar": 1, "UInt16": 2, "Int16": 2, "UInt32": 4,
           "Int32": 4, "Float32": 4, "UInt64": 8, "Int64": 8, "Csize_t": 8, "Float64": 8}
# Names a generated struct must not take (Core/Base bindings every module sees).
RESERVED = {"Module", "Function", "Type", "Task", "Array", "Vector", "String", "Symbol",
            "Expr", "Ptr", "Ref", "Tuple", "Union", "Nothing", "Any", "Char", "Int",
            "Bool", "Pair", "Dict", "Set", "Val", "Method", "Core", "Base", "Main"}
JL_KEYWORDS = {"function", "end", "module", "baremodule", "begin", "quote", "let", "local",
               "global", "const", "do", "struct", "mutable", "abstract", "primitive",
               "type", "macro", "for", "while", "if", "else", "elseif", "try", "catch",
               "finally", "return", "break", "continue", "import", "using", "export",
               "true", "false", "in", "isa", "where", "outer"}


class GenError(Exception):
    pass


def jl_struct_name(c_name):
    """t4a_host_buffer -> HostBuffer; t4a_module -> T4aModule (Core has
    Module); names without the t4a_ prefix (DLPack's DLTensor, ...) stay."""
    name = re.sub(r"^struct\s+", "", c_name)
    if not name.startswith("t4a_"):
        return name
    jl = "".join(p[:1].upper() + p[1:] for p in name[4:].split("_") if p)
    return "T4a" + jl if jl in RESERVED else jl


def jl_ident(name):
    return name + "_" if name in JL_KEYWORDS else name


class Types:
    def __init__(self, doc):
        self.structs = {s["name"]: s for s in doc["structs"]}
        self.handles = {jl_struct_name(s["name"]) for s in doc["structs"] if s.get("handle")}
        self.typedefs = {t["name"]: t for t in doc.get("typedefs", [])}
        self.enums = {e["typedef"] for e in doc.get("enums", []) if e.get("typedef")}
        self.enums |= {"enum " + e["name"] for e in doc.get("enums", [])}

    def base(self, c_base, where):
        """A C type name without pointers or qualifiers -> Julia type."""
        b = re.sub(r"\bconst\b", "", c_base).strip()
        b = re.sub(r"\s+", " ", b)
        if b in C_SCALARS:
            return C_SCALARS[b]
        bare = re.sub(r"^struct\s+", "", b)
        if bare in self.structs:
            return jl_struct_name(bare)
        if b in self.typedefs:
            t = self.typedefs[b]
            if t["kind"] == "fnptr":
                return "Ptr{Cvoid}"
            if t["kind"] in SCALARS:
                return SCALARS[t["kind"]]
            return self.base(t["c_type"], where)
        if b in self.enums:
            return "Int32"
        raise GenError("%s: C type '%s' has no Julia mapping in %s" % (where, c_base, __file__))

    def c_type(self, c_type, where):
        """A full C type (pointers included) -> Julia type."""
        t = c_type.strip()
        m = re.match(r"^(.*?)\s*\*\s*(const)?$", t)
        if m:
            inner = m.group(1)
            return "Ptr{%s}" % self.c_type(inner, where)
        return self.base(t, where)

    def of(self, d, ctx, where):
        """A layouts.json type description -> Julia type. ctx: arg, ret or
        field (const char * is Cstring for arguments and results, and
        Ptr{Cchar} in struct fields, where a Julia String cannot live)."""
        k = d["kind"]
        if k in ("handle", "struct"):
            name = d.get("type") or d["c_type"]
            if re.sub(r"^(const\s+)?(struct\s+)?", "", name) not in self.structs:
                raise GenError("%s: struct type '%s' is not in layouts.json" % (where, name))
            return jl_struct_name(re.sub(r"^(const\s+)?", "", name))
        if k == "cstr":
            return "Cstring" if ctx in ("arg", "ret") else "Ptr{Cchar}"
        if k == "ptr":
            return self.c_type(d["c_type"], where)
        if k == "fnptr":
            return "Ptr{Cvoid}"
        if k == "array":
            m = re.match(r"^(.*?)\s*\[[^\]]*\]$", d["c_type"])
            if not m:
                raise GenError("%s: array type '%s' not understood" % (where, d["c_type"]))
            ek = d.get("element_kind")
            elem = SCALARS[ek] if ek in SCALARS and ek != "void" else self.base(m.group(1), where)
            return "NTuple{%d, %s}" % (d["count"], elem)
        if k in SCALARS:
            return SCALARS[k]
        raise GenError("%s: kind '%s' (C type '%s') is not handled by %s"
                       % (where, k, d.get("c_type"), os.path.basename(__file__)))


def jl_layout(jt, sizes):
    """(size, align) of a Julia field type, for the generator's own check."""
    if jt in JL_SIZE:
        return JL_SIZE[jt], JL_SIZE[jt]
    if jt.startswith("Ptr{") or jt == "Cstring":
        return 8, 8
    m = re.match(r"^NTuple\{(\d+), (.*)\}$", jt)
    if m:
        s, a = jl_layout(m.group(2), sizes)
        return int(m.group(1)) * s, a
    if jt in sizes:
        return sizes[jt]
    raise GenError("no layout for Julia type %s" % jt)


def deps(s, types):
    """Struct names a struct's Julia definition needs defined first."""
    out = []
    for f in s["fields"]:
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", f["c_type"]):
            if word in types.structs and word != s["name"]:
                out.append(word)
        if f.get("type") in types.structs and f["type"] != s["name"]:
            out.append(f["type"])
    return out


def order_structs(doc, types):
    done, out, busy = set(), [], set()

    def visit(name):
        if name in done:
            return
        if name in busy:
            raise GenError("struct %s: cyclic struct references cannot be declared in Julia"
                           % name)
        busy.add(name)
        for d in deps(types.structs[name], types):
            visit(d)
        busy.discard(name)
        done.add(name)
        out.append(types.structs[name])

    for s in doc["structs"]:
        visit(s["name"])
    return out


def zero_of(jt, handles):
    if jt in handles:
        return "%s(0)" % jt  # the null handle
    if jt in JL_SIZE:
        return "%s(0)" % jt
    if jt.startswith("Ptr{"):
        return "%s(0)" % jt
    m = re.match(r"^NTuple\{(\d+), (.*)\}$", jt)
    if m:
        return "ntuple(_ -> %s, %s)" % (zero_of(m.group(2), handles), m.group(1))
    return "%s()" % jt  # a nested struct: its own all-zero keyword constructor


def gen_struct(s, types, sizes, w):
    name = jl_struct_name(s["name"])
    where = "struct %s" % s["name"]
    tags = ["C %s: %d bytes, align %d" % (s["name"], s["size"], s["align"])]
    if s.get("handle"):
        tags.append("handle, passed by value")
    if s.get("experimental"):
        tags.append("experimental")
    if s.get("header"):
        tags.append(s["header"])
    w("# %s" % "; ".join(tags))
    w("struct %s" % name)
    off, align, fields, npad = 0, 1, [], 0
    for f in s["fields"]:
        jt = types.of(f, "field", "%s.%s" % (s["name"], f["name"]))
        fs, fa = jl_layout(jt, sizes)
        aligned = (off + fa - 1) // fa * fa
        if f["offset"] < aligned:
            raise GenError("%s.%s: offset %d is below %d, where Julia would place %s"
                           % (s["name"], f["name"], f["offset"], aligned, jt))
        if f["offset"] > aligned:
            # C has padding Julia would not add by itself: bytes, explicitly
            gap = f["offset"] - off
            w("    _pad%d::NTuple{%d, UInt8}  # C padding at offset %d" % (npad, gap, off))
            fields.append(("_pad%d" % npad, "NTuple{%d, UInt8}" % gap, None))
            npad += 1
            off = f["offset"]
        if fs != f["size"]:
            raise GenError("%s.%s: C size %d, Julia %s has %d" % (s["name"], f["name"],
                                                                 f["size"], jt, fs))
        w("    %s::%s  # offset %d, C %s" % (jl_ident(f["name"]), jt, f["offset"], f["c_type"]))
        fields.append((jl_ident(f["name"]), jt, f))
        off = f["offset"] + fs
        align = max(align, fa)
    size = (off + align - 1) // align * align
    if size < s["size"]:
        gap = s["size"] - off
        w("    _pad%d::NTuple{%d, UInt8}  # C tail padding at offset %d" % (npad, gap, off))
        fields.append(("_pad%d" % npad, "NTuple{%d, UInt8}" % gap, None))
        size = s["size"]
    if size != s["size"] or align != s["align"]:
        raise GenError("%s: C is %d bytes align %d, Julia would be %d align %d"
                       % (where, s["size"], s["align"], size, align))
    w("end")
    sizes[name] = (size, align)
    if not s.get("handle"):
        # keyword constructor: every field zero (the library's defaults),
        # struct_size set to the C size for versioned structs
        if s.get("init_is_zero_fill") is False:
            raise GenError("%s: its _INIT is not struct_size + zero bytes; the Julia "
                           "keyword defaults would not match it" % where)
        kws = []
        for fname, jt, f in fields:
            if f is None:
                continue
            if fname == "struct_size" and s.get("versioned"):
                kws.append("%s = UInt32(%d)" % (fname, s["size"]))
            else:
                kws.append("%s = %s" % (fname, zero_of(jt, types.handles)))
        args = [("ntuple(_ -> UInt8(0), %s)" % jt.split("{")[1].split(",")[0])
                if f is None else fname for fname, jt, f in fields]
        w("%s(; %s) =" % (name, ", ".join(kws)))
        w("    %s(%s)" % (name, ", ".join(args)))
    w("")


def c_signature(fn):
    params = ", ".join("%s %s" % (p["c_type"], p["name"]) for p in fn["params"]) or "void"
    return "%s %s(%s)" % (fn["returns"]["c_type"], fn["name"], params)


def gen_function(fn, types, w):
    where = "function %s" % fn["name"]
    ret = types.of(fn["returns"], "ret", where)
    args = [types.of(p, "arg", "%s parameter %s" % (fn["name"], p["name"])) for p in fn["params"]]
    names = [jl_ident(p["name"]) for p in fn["params"]]
    argt = "(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")"
    w("# %s%s" % (c_signature(fn), "  [experimental]" if fn.get("experimental") else ""))
    w("%s(%s) =" % (fn["name"], ", ".join(names)))
    w("    ccall((:%s, libt4acuda), %s, %s%s)" % (fn["name"], ret, argt,
                                                  "".join(", " + n for n in names)))
    w("")


def const_value(c):
    k, v = c["kind"], c["value"]
    if k == "string":
        return json.dumps(v)
    if k in SCALARS:
        return "%s(%d)" % (SCALARS[k], v)
    raise GenError("constant %s: kind '%s' is not handled" % (c["name"], k))


def generate(doc):
    if doc.get("schema") != 1:
        raise GenError("layouts.json schema %r; this generator reads schema 1" % doc.get("schema"))
    dm = doc.get("data_model", {})
    if dm.get("pointer_bytes") != 8 or dm.get("size_t_bytes") != 8:
        raise GenError("layouts.json data model %r; the Julia package assumes 64-bit" % dm)
    types = Types(doc)
    lines = []
    w = lines.append
    w("# GENERATED by bindings/julia/gen/generate.py from abi/layouts.json. Do not edit:")
    w("# regenerate with `python3 bindings/julia/gen/generate.py` (the ctest")
    w("# julia_generated_check fails while this file is stale).")
    w("#")
    w("# One isbits struct per C struct (same field order, offsets and size; _padN")
    w("# fields stand where C has padding), constants, and one ccall wrapper per")
    w("# exported function with the exact C argument and return types.")
    w("")
    w("module LibT4aCuda")
    w("")
    w("# The library: T4ACUDA_LIBRARY (a path or a soname) when set at load time")
    w("# of this package's precompilation, else the installed soname.")
    w('const libt4acuda = get(ENV, "T4ACUDA_LIBRARY", "libt4acuda.so.0")')
    w("")
    w("# ---- structs ----")
    w("")
    sizes = {}
    for s in order_structs(doc, types):
        gen_struct(s, types, sizes, w)
    w("# ---- enums ----")
    w("")
    for e in doc.get("enums", []):
        w("# enum %s%s" % (e["name"], " (typedef %s)" % e["typedef"] if e.get("typedef") else ""))
        for v in e["values"]:
            w("const %s = Int32(%d)" % (v["name"], v["value"]))
        w("")
    w("# ---- constants ----")
    w("")
    for c in doc.get("constants", []):
        w("const %s = %s%s" % (c["name"], const_value(c),
                               "  # experimental" if c.get("experimental") else ""))
    w("")
    w("# ---- functions ----")
    w("")
    for fn in doc["functions"]:
        gen_function(fn, types, w)
    w("end # module LibT4aCuda")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layouts", default=LAYOUTS)
    ap.add_argument("--output", default=OUTPUT)
    ap.add_argument("--stdout", action="store_true")
    a = ap.parse_args()
    try:
        with open(a.layouts) as f:
            doc = json.load(f)
        text = generate(doc)
    except (GenError, OSError, ValueError, KeyError) as e:
        print("generate.py: %s" % e, file=sys.stderr)
        return 1
    if a.stdout:
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
