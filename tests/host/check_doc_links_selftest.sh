#!/usr/bin/env bash
# Self-test of scripts/check-doc-links (ctest docs_links_selftest, label
# docs): on a small tree it passes; a broken link, a broken #anchor, or a
# citation of a document outside the repository in any tracked file (a
# requirement id in a C comment, the specification's file name in a CMake
# file, a path into the shared folder in a script) makes it fail, naming
# the file and line. Both ways of listing files are exercised: a git work
# tree (git ls-files) and a plain copy (find).
#   check_doc_links_selftest.sh SCRIPT
set -u
script="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

# A tree that passes: README.md and docs/ linking each other, a source file.
fresh() {
  rm -rf "$work/t"
  mkdir -p "$work/t/docs" "$work/t/src"
  printf '# T\n\nSee [a](docs/a.md#rules).\n' >"$work/t/README.md"
  printf '# A\n\n## Rules\n\nBack to [the readme](../README.md).\n' \
    >"$work/t/docs/a.md"
  printf '// A comment that cites nothing.\nint x;\n' >"$work/t/src/x.c"
  printf 'add_library(x src/x.c)\n' >"$work/t/CMakeLists.txt"
  if [ "$1" = git ]; then
    git -C "$work/t" init -q && git -C "$work/t" add -A
  fi
}

# expect MODE WHAT WANT-RC WANT-SUBSTRING
expect() {
  local mode="$1" what="$2" want_rc="$3" want="$4" out rc
  out="$(bash "$script" "$work/t" 2>&1)"
  rc=$?
  if [ "$rc" -ne "$want_rc" ]; then
    echo "FAIL ($mode): $what: exit $rc, expected $want_rc; output:"
    echo "$out"
    failures=$((failures + 1))
  elif [[ "$out" != *"$want"* ]]; then
    echo "FAIL ($mode): $what: output lacks '$want':"
    echo "$out"
    failures=$((failures + 1))
  else
    echo "ok ($mode): $what"
  fi
}

# The cited strings are assembled here so that this file itself cites
# nothing (check-doc-links scans it too).
id="R-""HARD-3"
spec="SP""EC.md"
shared="../sha""red/notes.md"

for mode in git plain; do
  command -v git >/dev/null 2>&1 || [ "$mode" = plain ] || continue
  fresh "$mode"
  expect "$mode" "a clean tree" 0 "every link resolves"

  fresh "$mode"
  printf 'A [dead link](docs/none.md).\n' >>"$work/t/README.md"
  expect "$mode" "a link to a missing file" 1 "README.md:4: link to 'docs/none.md'"

  fresh "$mode"
  printf 'A [dead anchor](a.md#nothing).\n' >>"$work/t/docs/a.md"
  expect "$mode" "a link to a missing heading" 1 "no heading with anchor #nothing"

  fresh "$mode"
  printf '/* the struct_size rule (%s) */\n' "$id" >>"$work/t/src/x.c"
  [ "$mode" = git ] && git -C "$work/t" add -A
  expect "$mode" "a requirement id in a C comment" 1 "src/x.c:3:"

  fresh "$mode"
  printf '# see %s section 5\n' "$spec" >>"$work/t/CMakeLists.txt"
  [ "$mode" = git ] && git -C "$work/t" add -A
  expect "$mode" "the specification named in a CMake file" 1 "CMakeLists.txt:2:"

  fresh "$mode"
  mkdir -p "$work/t/scripts"
  printf '#!/bin/sh\ncat %s\n' "$shared" >"$work/t/scripts/s"
  [ "$mode" = git ] && git -C "$work/t" add -A
  expect "$mode" "a path into the shared folder in a script" 1 "scripts/s:2:"
done

if [ "$failures" -ne 0 ]; then
  echo "check_doc_links_selftest: $failures failure(s)"
  exit 1
fi
echo "check_doc_links_selftest: every case behaved"
