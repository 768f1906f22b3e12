//! Checks every declaration of t4acuda-sys against abi/layouts.json (the
//! file generated from include/t4acuda.h by abi/gen-layouts):
//!  * every struct: size, alignment, and each field's name, order,
//!    offset, size and binding kind (pointer and handle fields: C type;
//!    arrays: element count), and the `init()` bytes against the `_INIT`
//!    values;
//!  * every function: parameter count, names, kinds (pointers and handles:
//!    C type), return kind;
//!  * every constant and enum value;
//!  * nothing declared here that the file does not list (it covers both
//!    headers, t4acuda.h and t4acuda_dlpack.h), and nothing the file lists
//!    left undeclared;
//!  * every function the built library exports (`nm -D --defined-only`,
//!    when nm and the library are there) is declared, except the test-only
//!    `t4a_testing_*` seam of test builds.
//!
//! The JSON is read with the small parser below (std only).
//! T4A_LAYOUTS_JSON overrides the file (the GPU lane sets it: the path
//! compiled in is the developer machine's).

use std::collections::BTreeMap;
use std::path::PathBuf;
use t4acuda_sys::abi::{ConstValue, FnSig, StructLayout};

// ---- a small JSON reader ----
#[derive(Debug, Clone)]
#[allow(dead_code)] // Float and Bool are parsed, not compared
enum Json {
    Null,
    Bool(bool),
    Num(i128),
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn str(&self, key: &str) -> &str {
        match self.get(key) {
            Some(Json::Str(s)) => s,
            other => panic!("field {key:?}: expected a string, found {other:?}"),
        }
    }
    fn int(&self, key: &str) -> i128 {
        match self.get(key) {
            Some(Json::Num(n)) => *n,
            other => panic!("field {key:?}: expected an integer, found {other:?}"),
        }
    }
    fn arr(&self, key: &str) -> &[Json] {
        match self.get(key) {
            Some(Json::Arr(a)) => a,
            other => panic!("field {key:?}: expected an array, found {other:?}"),
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, what: &str) -> String {
        format!("JSON: {what} at byte {}", self.i)
    }
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected '{}'", c as char)))
        }
    }
    fn lit(&mut self, word: &str, v: Json) -> Result<Json, String> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("unknown literal"))
        }
    }
    fn value(&mut self) -> Result<Json, String> {
        self.ws();
        match self.s.get(self.i).copied() {
            None => Err(self.err("unexpected end")),
            Some(b'{') => {
                self.i += 1;
                let mut m = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(m));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.eat(b':')?;
                    let v = self.value()?;
                    m.push((k, v));
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(m));
                        }
                        _ => return Err(self.err("expected ',' or '}'")),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Json::Arr(a));
                }
                loop {
                    a.push(self.value()?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(a));
                        }
                        _ => return Err(self.err("expected ',' or ']'")),
                    }
                }
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b't') => self.lit("true", Json::Bool(true)),
            Some(b'f') => self.lit("false", Json::Bool(false)),
            Some(b'n') => self.lit("null", Json::Null),
            Some(_) => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                if let Ok(n) = t.parse::<i128>() {
                    Ok(Json::Num(n))
                } else {
                    t.parse::<f64>()
                        .map(Json::Float)
                        .map_err(|_| self.err(&format!("bad number {t:?}")))
                }
            }
        }
    }
    fn string(&mut self) -> Result<String, String> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let c = *self.s.get(self.i).ok_or_else(|| self.err("unterminated string"))?;
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = *self.s.get(self.i).ok_or_else(|| self.err("bad escape"))?;
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let h = std::str::from_utf8(&self.s[self.i..self.i + 4]).unwrap();
                            self.i += 4;
                            let cp = u32::from_str_radix(h, 16).map_err(|_| self.err("bad \\u"))?;
                            let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                            out.extend_from_slice(ch.to_string().as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("string is not UTF-8"))
    }
}

fn parse(text: &str) -> Json {
    let mut p = Parser { s: text.as_bytes(), i: 0 };
    let v = p.value().unwrap_or_else(|e| panic!("{e}"));
    p.ws();
    assert_eq!(p.i, text.len(), "JSON: trailing bytes at {}", p.i);
    v
}

#[test]
fn json_reader_reads_what_it_must() {
    let v =
        parse(r#"{"a": [1, -2, 18446744073709551615], "b": "x\"\u0041", "c": null, "d": true}"#);
    let a = v.arr("a");
    assert!(matches!(a[2], Json::Num(n) if n == u64::MAX as i128));
    assert!(matches!(a[1], Json::Num(-2)));
    assert_eq!(v.str("b"), "x\"A");
    assert!(matches!(v.get("c"), Some(Json::Null)));
    assert!(matches!(v.get("d"), Some(Json::Bool(true))));
}

// ---- the comparison ----
fn layouts_path() -> PathBuf {
    if let Some(p) = std::env::var_os("T4A_LAYOUTS_JSON") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../abi/layouts.json")
}

fn load() -> Json {
    let path = layouts_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    parse(&text)
}

fn norm(c: &str) -> String {
    c.chars().filter(|c| !c.is_whitespace()).collect::<String>().replace("t4a_status", "int32_t")
}

/// Compares one kind + C type pair; `what` names it in the message.
fn check_type(errs: &mut Vec<String>, what: &str, j: &Json, kind: &str, c_type: &str) {
    let jk = j.str("kind");
    if jk != kind {
        errs.push(format!("{what}: kind {kind} here, {jk} in layouts.json ({})", j.str("c_type")));
        return;
    }
    match jk {
        "ptr" | "handle" | "cstr" => {
            if norm(j.str("c_type")) != norm(c_type) {
                errs.push(format!(
                    "{what}: C type `{c_type}` here, `{}` in layouts.json",
                    j.str("c_type")
                ));
            }
        }
        "array" => {
            let count = j.int("count");
            if !c_type.ends_with(&format!("[{count}]")) {
                errs.push(format!("{what}: `{c_type}` here, {count} elements in layouts.json"));
            }
        }
        _ => {}
    }
}

fn compare_structs(doc: &Json) -> Vec<String> {
    let mut errs = Vec::new();
    // The generated structs and the hand-written experimental ones.
    let mine: BTreeMap<&str, StructLayout> = t4acuda_sys::struct_layouts()
        .into_iter()
        .chain(t4acuda_sys::experimental_struct_layouts())
        .map(|s| (s.name, s))
        .collect();
    let inits: BTreeMap<&str, Vec<u8>> = t4acuda_sys::struct_inits()
        .into_iter()
        .chain(t4acuda_sys::experimental_struct_inits())
        .collect();
    let mut listed = Vec::new();
    for js in doc.arr("structs") {
        let name = js.str("name");
        listed.push(name.to_string());
        let Some(s) = mine.get(name) else {
            if is_experimental(js) {
                continue;
            }
            errs.push(format!("struct {name}: in layouts.json, not declared in t4acuda-sys"));
            continue;
        };
        let jf = js.arr("fields");
        let fields = &s.fields[..];
        let size_ok = s.size as i128 == js.int("size");
        if !size_ok || s.align as i128 != js.int("align") {
            errs.push(format!(
                "struct {name}: size {} align {} here, size {} align {} in layouts.json",
                s.size,
                s.align,
                js.int("size"),
                js.int("align")
            ));
        }
        if jf.len() != fields.len() {
            errs.push(format!(
                "struct {name}: {} fields here, {} in layouts.json",
                fields.len(),
                jf.len()
            ));
        }
        for (i, (f, j)) in fields.iter().zip(jf).enumerate() {
            let what = format!("struct {name} field {i} ({})", f.name);
            if f.name != j.str("name") {
                errs.push(format!("{what}: named {} in layouts.json", j.str("name")));
            }
            if f.offset as i128 != j.int("offset") || f.size as i128 != j.int("size") {
                errs.push(format!(
                    "{what}: offset {} size {} here, offset {} size {} in layouts.json",
                    f.offset,
                    f.size,
                    j.int("offset"),
                    j.int("size")
                ));
            }
            check_type(&mut errs, &what, j, f.kind, &f.c_type);
        }
        // `_INIT` values: init() must hold them.
        if !matches!(js.get("init_macro"), None | Some(Json::Null)) {
            let Some(bytes) = inits.get(name) else {
                errs.push(format!(
                    "struct {name}: has {} in C but no init() here",
                    js.str("init_macro")
                ));
                continue;
            };
            for j in jf {
                let (Some(Json::Num(want)), off, size) =
                    (j.get("init"), j.int("offset") as usize, j.int("size") as usize)
                else {
                    continue;
                };
                if size > 8 || off + size > bytes.len() {
                    continue;
                }
                let mut v: u64 = 0;
                for (k, b) in bytes[off..off + size].iter().enumerate() {
                    v |= (*b as u64) << (8 * k);
                }
                if v as i128 != *want {
                    errs.push(format!(
                        "struct {name}: init().{} is {v}, {} in C ({})",
                        j.str("name"),
                        want,
                        js.str("init_macro")
                    ));
                }
            }
        }
    }
    for name in mine.keys() {
        if !listed.iter().any(|l| l == name) {
            errs.push(format!("struct {name}: declared here, not in layouts.json"));
        }
    }
    errs
}

// Declared in the header's experimental section (`#if defined(T4A_EXPERIMENTAL)`).
fn is_experimental(j: &Json) -> bool {
    matches!(j.get("experimental"), Some(Json::Bool(true)))
}

fn compare_functions(doc: &Json) -> Vec<String> {
    let mut errs = Vec::new();
    let mine: BTreeMap<&str, FnSig> =
        t4acuda_sys::function_sigs().into_iter().map(|f| (f.name, f)).collect();
    let mut listed = Vec::new();
    for jf in doc.arr("functions") {
        let name = jf.str("name");
        listed.push(name.to_string());
        let Some(f) = mine.get(name) else {
            // The experimental section need not be bound; what is, must match.
            if is_experimental(jf) {
                continue;
            }
            errs.push(format!(
                "function {name}: exported by the header, not declared in t4acuda-sys"
            ));
            continue;
        };
        let jp = jf.arr("params");
        if jp.len() != f.params.len() {
            errs.push(format!(
                "function {name}: {} parameters here, {} in layouts.json",
                f.params.len(),
                jp.len()
            ));
            continue;
        }
        for (i, (p, j)) in f.params.iter().zip(jp).enumerate() {
            let what = format!("function {name} parameter {i} ({})", p.name);
            if p.name.trim_end_matches('_') != j.str("name") {
                errs.push(format!("{what}: named {} in layouts.json", j.str("name")));
            }
            check_type(&mut errs, &what, j, p.kind, &p.c_type);
        }
        let r = jf.get("returns").expect("returns");
        check_type(
            &mut errs,
            &format!("function {name} return"),
            r,
            f.returns.kind,
            &f.returns.c_type,
        );
    }
    for name in mine.keys() {
        if !listed.iter().any(|l| l == name) {
            errs.push(format!("function {name}: declared here, not in layouts.json"));
        }
    }
    errs
}

fn compare_constants(doc: &Json) -> Vec<String> {
    let mut errs = Vec::new();
    let mine: BTreeMap<&str, ConstValue> =
        t4acuda_sys::constants().into_iter().map(|c| (c.name, c.value)).collect();
    let mut want: Vec<(String, ConstValue)> = Vec::new();
    let mut optional: Vec<String> = Vec::new();
    for c in doc.arr("constants") {
        if is_experimental(c) {
            optional.push(c.str("name").to_string());
        }
        let v = match c.get("value") {
            Some(Json::Num(n)) => ConstValue::Int(*n),
            Some(Json::Str(s)) => ConstValue::Str(Box::leak(s.clone().into_boxed_str())),
            other => panic!("constant {}: value {other:?}", c.str("name")),
        };
        want.push((c.str("name").to_string(), v));
    }
    for e in doc.arr("enums") {
        for v in e.arr("values") {
            if is_experimental(e) || is_experimental(v) {
                optional.push(v.str("name").to_string());
            }
            want.push((v.str("name").to_string(), ConstValue::Int(v.int("value"))));
        }
    }
    for (name, v) in &want {
        match mine.get(name.as_str()) {
            None if optional.contains(name) => {}
            None => {
                errs.push(format!("constant {name}: in layouts.json, not declared in t4acuda-sys"))
            }
            Some(m) if m != v => {
                errs.push(format!("constant {name}: {m:?} here, {v:?} in layouts.json"))
            }
            _ => {}
        }
    }
    for name in mine.keys() {
        if !want.iter().any(|(w, _)| w == name) {
            errs.push(format!("constant {name}: declared here, not in layouts.json"));
        }
    }
    errs
}

fn report(what: &str, errs: Vec<String>) {
    assert!(
        errs.is_empty(),
        "{what}: {} mismatch(es) between t4acuda-sys and {}:\n  {}",
        errs.len(),
        layouts_path().display(),
        errs.join("\n  ")
    );
}

#[test]
fn structs_match_layouts_json() {
    report("structs", compare_structs(&load()));
}

/// The structs declared by hand in lib.rs are the experimental section's
/// (a stable struct comes from abi/gen-bindings, in structs.rs).
#[test]
fn hand_written_structs_are_experimental() {
    let doc = load();
    let mut errs = Vec::new();
    for s in t4acuda_sys::experimental_struct_layouts() {
        match doc.arr("structs").iter().find(|j| j.str("name") == s.name) {
            Some(j) if is_experimental(j) => {}
            Some(_) => errs.push(format!(
                "struct {}: stable in layouts.json: abi/gen-bindings writes it into \
                 structs.rs; remove it from lib.rs's experimental section",
                s.name
            )),
            None => errs.push(format!("struct {}: not in layouts.json", s.name)),
        }
    }
    assert!(!t4acuda_sys::experimental_struct_inits().is_empty());
    report("experimental structs", errs);
}

#[test]
fn functions_match_layouts_json() {
    let doc = load();
    assert!(doc.arr("functions").len() >= 75, "layouts.json lists too few functions");
    report("functions", compare_functions(&doc));
}

#[test]
fn constants_match_layouts_json() {
    report("constants", compare_constants(&load()));
}

#[test]
fn typedefs_match_layouts_json() {
    let doc = load();
    let mut errs = Vec::new();
    for t in doc.arr("typedefs") {
        let (size, align) = match t.str("name") {
            "t4a_status" => (
                std::mem::size_of::<t4acuda_sys::t4a_status>(),
                std::mem::align_of::<t4acuda_sys::t4a_status>(),
            ),
            "t4a_log_fn" => (
                std::mem::size_of::<Option<t4acuda_sys::t4a_log_fn>>(),
                std::mem::align_of::<Option<t4acuda_sys::t4a_log_fn>>(),
            ),
            other => {
                errs.push(format!("typedef {other}: not declared in t4acuda-sys"));
                continue;
            }
        };
        if size as i128 != t.int("size") || align as i128 != t.int("align") {
            errs.push(format!("typedef {}: size/align {size}/{align} here", t.str("name")));
        }
    }
    report("typedefs", errs);
}

/// A planted mismatch must be caught: the test is not vacuous.
#[test]
fn a_planted_mismatch_fails() {
    let text = std::fs::read_to_string(layouts_path()).unwrap();
    // Move the second field of t4a_error_info (status, offset 4) to 8.
    let planted = text.replacen("\"offset\": 4,", "\"offset\": 5,", 1);
    assert_ne!(planted, text, "the planted edit found nothing to change");
    assert!(!compare_structs(&parse(&planted)).is_empty(), "a moved field went unnoticed");
    let planted = text.replacen("\"name\": \"t4a_version\"", "\"name\": \"t4a_version_new\"", 1);
    assert!(
        compare_functions(&parse(&planted)).iter().any(|e| e.contains("t4a_version_new")),
        "an undeclared function went unnoticed"
    );
    let planted = text.replacen("\"value\": 32764", "\"value\": 32765", 1);
    assert!(!compare_constants(&parse(&planted)).is_empty(), "a changed constant went unnoticed");
}

/// Every function the built library exports has a declaration.
#[test]
fn every_export_is_declared() {
    let lib = match (std::env::var_os("T4ACUDA_LIBRARY"), option_env!("T4ACUDA_SYS_LIB_DIR")) {
        (Some(p), _) => PathBuf::from(p),
        (None, Some(d)) => PathBuf::from(d).join("libt4acuda.so"),
        (None, None) => {
            eprintln!("every_export_is_declared: no library (feature `link` off, no T4ACUDA_LIBRARY): only layouts.json was checked");
            return;
        }
    };
    if !lib.exists() {
        // The carried test binaries on the GPU machine: the library of the
        // build they were linked against is not there.
        eprintln!("every_export_is_declared: {} not found: skipped", lib.display());
        return;
    }
    let out =
        match std::process::Command::new("nm").arg("-D").arg("--defined-only").arg(&lib).output() {
            Ok(o) if o.status.success() => o,
            Ok(o) => {
                panic!("nm -D {} failed: {}", lib.display(), String::from_utf8_lossy(&o.stderr))
            }
            Err(e) => {
                eprintln!("every_export_is_declared: nm not available ({e}): skipped");
                return;
            }
        };
    let declared: Vec<String> =
        t4acuda_sys::function_sigs().into_iter().map(|f| f.name.to_string()).collect();
    // The header's experimental section is bound only in part: its
    // functions are exported but not promised to the bindings (those that
    // are declared are checked by functions_match_layouts_json).
    let experimental: Vec<String> = load()
        .arr("functions")
        .iter()
        .filter(|f| matches!(f.get("experimental"), Some(Json::Bool(true))))
        .map(|f| f.str("name").to_string())
        .collect();
    let mut missing = Vec::new();
    let mut exports = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() != 3 || parts[1] != "T" {
            continue;
        }
        let name = parts[2].split('@').next().unwrap();
        if !name.starts_with("t4a_")
            || name.starts_with("t4a_testing_")
            || experimental.iter().any(|e| e == name)
        {
            continue;
        }
        exports += 1;
        if !declared.iter().any(|d| d == name) {
            missing.push(name.to_string());
        }
    }
    assert!(exports >= 75, "{} exports only {exports} t4a_ functions", lib.display());
    assert!(
        missing.is_empty(),
        "{} exports functions t4acuda-sys does not declare: {missing:?}",
        lib.display()
    );
}
