# Checks that a README code block (the ```FENCE block that follows the line
# "<!-- NAME -->" in README.md) is the file EXAMPLE byte for byte, and, when
# MAX_LINES is given, that it has at most MAX_LINES non-blank lines.
# Usage: cmake -DREADME=... -DNAME=saxpy.cpp -DFENCE=cpp -DEXAMPLE=...
#              [-DMAX_LINES=15] -P this file
# SPDX-License-Identifier: MIT OR Apache-2.0
foreach(var README NAME FENCE EXAMPLE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_readme_snippet: -D${var}=... is required")
  endif()
endforeach()
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)

set(marker "<!-- ${NAME} -->\n```${FENCE}\n")
string(FIND "${readme}" "${marker}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README}: no line \"<!-- ${NAME} -->\" followed by a ```${FENCE} block")
endif()
string(LENGTH "${marker}" marker_length)
math(EXPR begin "${at} + ${marker_length}")
string(SUBSTRING "${readme}" ${begin} -1 rest)
string(FIND "${rest}" "```" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${README}: the ${NAME} block is not closed")
endif()
string(SUBSTRING "${rest}" 0 ${end} snippet)

if(NOT snippet STREQUAL example)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/readme_${NAME}" "${snippet}")
  message(FATAL_ERROR "the README's ${NAME} block differs from ${EXAMPLE} "
    "(the README's block is in ${CMAKE_CURRENT_BINARY_DIR}/readme_${NAME}; "
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
if(DEFINED MAX_LINES AND count GREATER MAX_LINES)
  message(FATAL_ERROR "${EXAMPLE} has ${count} non-blank lines; at most ${MAX_LINES} allowed")
endif()
message(STATUS "the README's ${NAME} block is ${EXAMPLE} (${count} non-blank lines; limit: ${MAX_LINES})")
