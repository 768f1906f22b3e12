# Checks that the README's C++ saxpy (the ```cpp block that follows the
# line "<!-- saxpy.cpp -->" in README.md) is examples/saxpy.cpp byte for
# byte, and that it has at most MAX_LINES non-blank lines.
# Usage: cmake -DREADME=... -DEXAMPLE=... -DMAX_LINES=15 -P this file
# SPDX-License-Identifier: MIT OR Apache-2.0
foreach(var README EXAMPLE MAX_LINES)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_readme_snippet: -D${var}=... is required")
  endif()
endforeach()
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)

set(marker "<!-- saxpy.cpp -->\n```cpp\n")
string(FIND "${readme}" "${marker}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README}: no line \"<!-- saxpy.cpp -->\" followed by a ```cpp block")
endif()
string(LENGTH "${marker}" marker_length)
math(EXPR begin "${at} + ${marker_length}")
string(SUBSTRING "${readme}" ${begin} -1 rest)
string(FIND "${rest}" "```" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${README}: the saxpy.cpp block is not closed")
endif()
string(SUBSTRING "${rest}" 0 ${end} snippet)

if(NOT snippet STREQUAL example)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/readme_saxpy_snippet.cpp" "${snippet}")
  message(FATAL_ERROR "the README's C++ saxpy differs from ${EXAMPLE} "
    "(the README's block is in ${CMAKE_CURRENT_BINARY_DIR}/readme_saxpy_snippet.cpp; "
    "diff the two)")
endif()

# Non-blank lines, counting the kernel source (walked with string(FIND):
# a CMake list would split or join lines at `;` and brackets).
set(count 0)
set(text "${example}")
while(NOT text STREQUAL "")
  string(FIND "${text}" "\n" nl)
  if(nl EQUAL -1)
    set(line "${text}")
    set(text "")
  else()
    string(SUBSTRING "${text}" 0 ${nl} line)
    math(EXPR next "${nl} + 1")
    string(SUBSTRING "${text}" ${next} -1 text)
  endif()
  if(line MATCHES "[^ \t\r]")
    math(EXPR count "${count} + 1")
  endif()
endwhile()
if(count GREATER MAX_LINES)
  message(FATAL_ERROR "${EXAMPLE} has ${count} non-blank lines; at most ${MAX_LINES} allowed")
endif()
message(STATUS "the README's C++ saxpy is ${EXAMPLE} (${count} non-blank lines, at most ${MAX_LINES})")
