# Runs doxygen on the configured Doxyfile.
# cmake -DDOXYGEN=... -DDOXYFILE=... -DWORKDIR=... -DWARN_AS_ERROR=...
#       -DSTRICT=ON|OFF [-DEXPECT_IN_INDEX=text] [-DEXPECT_PAGE=file.html]
#       -P run-doxygen.cmake
# STRICT=ON fails on any warning (WARN_AS_ERROR is the Doxyfile value for
# that: YES or FAIL_ON_WARNINGS); OFF prints warnings and succeeds.
# EXPECT_IN_INDEX: text html/index.html (the main page) must contain.
# EXPECT_PAGE: a page html/ must hold (experimental.html).
if(NOT DOXYGEN)
  message(FATAL_ERROR
    "docs: doxygen was not found when the build was configured; install it "
    "(apt-get install doxygen; scripts/test does this) and reconfigure")
endif()
if(STRICT)
  set(ENV{T4A_DOXYGEN_WARN_AS_ERROR} "${WARN_AS_ERROR}")
else()
  set(ENV{T4A_DOXYGEN_WARN_AS_ERROR} NO)
endif()
file(REMOVE_RECURSE "${WORKDIR}/html")
execute_process(COMMAND "${DOXYGEN}" "${DOXYFILE}"
  WORKING_DIRECTORY "${WORKDIR}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
# Older doxygen versions may exit 0 with warnings printed: count them too.
string(REGEX MATCHALL "[^\n]*(warning|error):[^\n]*" warnings "${out}\n${err}")
list(LENGTH warnings n)
if(out)
  message("${out}")
endif()
if(err)
  message("${err}")
endif()
if(NOT rc EQUAL 0 OR (STRICT AND n GREATER 0))
  message(FATAL_ERROR
    "docs: doxygen exit status ${rc}, ${n} warning(s): every public symbol "
    "needs a complete doc comment (see the warnings above)")
endif()
if(NOT EXISTS "${WORKDIR}/html/index.html")
  message(FATAL_ERROR "docs: doxygen wrote no ${WORKDIR}/html/index.html")
endif()
if(DEFINED EXPECT_IN_INDEX)
  file(READ "${WORKDIR}/html/index.html" index)
  string(REGEX REPLACE "[ \t\r\n]+" " " index "${index}")
  string(FIND "${index}" "${EXPECT_IN_INDEX}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR
      "docs: the main page ${WORKDIR}/html/index.html lacks the "
      "introduction ('${EXPECT_IN_INDEX}'): include/t4acuda.h's @mainpage "
      "block is missing or empty")
  endif()
endif()
if(DEFINED EXPECT_PAGE AND NOT EXISTS "${WORKDIR}/html/${EXPECT_PAGE}")
  message(FATAL_ERROR
    "docs: doxygen wrote no ${WORKDIR}/html/${EXPECT_PAGE} (the "
    "Experimental API list: the @experimental alias of docs/Doxyfile.in or "
    "the tagged declarations of include/t4acuda.h are missing)")
endif()
message(STATUS "docs: reference written to ${WORKDIR}/html/index.html (${n} warning(s))")
