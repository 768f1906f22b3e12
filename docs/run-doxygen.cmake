# Runs doxygen on the configured Doxyfile and fails on any warning.
# cmake -DDOXYGEN=... -DDOXYFILE=... -DWORKDIR=... -P run-doxygen.cmake
if(NOT DOXYGEN)
  message(FATAL_ERROR
    "docs: doxygen was not found when the build was configured; install it "
    "(apt-get install doxygen; scripts/test does this) and reconfigure")
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
if(NOT rc EQUAL 0 OR n GREATER 0)
  message(FATAL_ERROR
    "docs: doxygen exit status ${rc}, ${n} warning(s): every public symbol "
    "needs a complete doc comment (see the warnings above)")
endif()
message(STATUS "docs: reference written to ${WORKDIR}/html/index.html")
