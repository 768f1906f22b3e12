#!/usr/bin/env bash
# Self-test of scripts/check-layering: on a copy of src/ it passes; with
# one planted include that breaks the layer table (core including launch,
# launch including compile, memory including the C++ facade, a '..'
# include, an angled include of a layer, an include behind a comment, a
# file outside every layer) it fails, naming the file, the line, the
# include and the rule.
#   check_layering_selftest.sh SCRIPT SRC_DIR
set -u
script="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

fresh() {
  rm -rf "$work/src"
  cp -R "$src" "$work/src"
}

# plant FILE LINE-TEXT EXPECTED-SUBSTRING
plant() {
  local file="$1" text="$2" want="$3" out rc line
  fresh
  mkdir -p "$(dirname "$work/src/$file")"
  printf '%s\n' "$text" >>"$work/src/$file"
  line="$(wc -l <"$work/src/$file")"
  want="${want//@LINE@/$line}"
  out="$(python3 "$script" "$work/src" 2>&1)"
  rc=$?
  if [ "$rc" -ne 1 ]; then
    echo "FAIL: planting '$text' in $file: exit $rc, expected 1; output:"
    echo "$out"
    failures=$((failures + 1))
  elif [[ "$out" != *"$want"* ]]; then
    echo "FAIL: planting '$text' in $file: output lacks '$want':"
    echo "$out"
    failures=$((failures + 1))
  else
    echo "ok: $file: $text"
  fi
}

fresh
if ! out="$(python3 "$script" "$work/src" 2>&1)"; then
  echo "FAIL: the unmodified copy of src/ does not pass:"
  echo "$out"
  failures=$((failures + 1))
fi

plant core/runtime.cpp '#include "launch/module.hpp"' \
  'core/runtime.cpp:@LINE@: #include "launch/module.hpp": core may include only driver, core (core -> launch points up)'
plant core/planted.hpp '#include "memory/buffer.hpp"' \
  'core/planted.hpp:@LINE@: #include "memory/buffer.hpp": core may include only driver, core (core -> memory points up)'
plant launch/module.cpp '#include "compile/artifact.hpp"' \
  'launch/module.cpp:@LINE@: #include "compile/artifact.hpp": launch may include only driver, core, memory, launch (launch -> compile is not in its table); the launch layer sees compiled artifacts only through core/artifact_view.hpp'
plant memory/buffer.cpp '#include "launch/launch.hpp"' \
  'memory/buffer.cpp:@LINE@: #include "launch/launch.hpp": memory may include only driver, core, memory (memory -> launch points up)'
plant compile/compiler.cpp '#include "memory/buffer.hpp"' \
  'compile/compiler.cpp:@LINE@: #include "memory/buffer.hpp": compile may include only driver, core, compile (compile -> memory points sideways)'
plant driver/cuda_api.cpp '#include "core/error.hpp"' \
  'driver/cuda_api.cpp:@LINE@: #include "core/error.hpp": driver may include only driver (driver -> core points up)'
plant memory/buffer.hpp '#include "t4acuda.hpp"' \
  'memory/buffer.hpp:@LINE@: #include "t4acuda.hpp": nothing in src/ includes the C++ facade'
plant capi/api_basics.cpp '#include <t4acuda.hpp>' \
  'capi/api_basics.cpp:@LINE@: #include <t4acuda.hpp>: nothing in src/ includes the C++ facade'
plant core/error.cpp '#include "../launch/launch.hpp"' \
  'core/error.cpp:@LINE@: #include "../launch/launch.hpp": include by path relative to src/'
# Angled includes of a layer are checked like quoted ones (src/ is on the
# include path); a comment before the directive, or a "/*" inside a line
# comment, hides nothing.
plant core/runtime.cpp '#include <launch/module.hpp>' \
  'core/runtime.cpp:@LINE@: #include <launch/module.hpp>: core may include only driver, core (core -> launch points up)'
plant core/error.cpp '#include <../launch/launch.hpp>' \
  'core/error.cpp:@LINE@: #include <../launch/launch.hpp>: include by path relative to src/'
plant launch/module.cpp '/* why */ #include "compile/artifact.hpp"' \
  'launch/module.cpp:@LINE@: #include "compile/artifact.hpp": launch may include only'
plant memory/buffer.cpp "$(printf '// a stray /* in a line comment\n#include "launch/launch.hpp"')" \
  'memory/buffer.cpp:@LINE@: #include "launch/launch.hpp": memory may include only driver, core, memory (memory -> launch points up)'
# The handle registry is the C boundary's: launch and memory take objects.
plant launch/launch.cpp '#include "core/registry.hpp"' \
  'launch/launch.cpp:@LINE@: #include "core/registry.hpp": only core, compile, capi may include core/registry.hpp (C handles are resolved in capi'
plant memory/buffer.cpp '#include <core/registry.hpp>' \
  'memory/buffer.cpp:@LINE@: #include <core/registry.hpp>: only core, compile, capi may include core/registry.hpp'
plant memory/buffer.cpp '#include "core/./registry.hpp"' \
  'memory/buffer.cpp:@LINE@: #include "core/./registry.hpp": only core, compile, capi may include core/registry.hpp'
plant newlayer/thing.cpp '#include "core/error.hpp"' \
  'newlayer/thing.cpp:1: a source file outside every layer'

if [ "$failures" -ne 0 ]; then
  echo "check_layering_selftest: $failures case(s) failed"
  exit 1
fi
echo "check_layering_selftest: all cases behave"
