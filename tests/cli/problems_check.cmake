# Runs KERNELEVAL with ARGS ("|"-separated), checks the exit code against
# EXPECT_EXIT and the output (stdout + stderr) against MATCH: a regular
# expression, or "json:KEY=VALUE" (the output is JSON; its field KEY, or the
# first element's KEY for an array, equals VALUE).
string(REPLACE "|" ";" _args "${ARGS}")
execute_process(COMMAND ${KERNELEVAL} ${_args}
                RESULT_VARIABLE _exit OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _exit EQUAL EXPECT_EXIT)
  message(FATAL_ERROR "exit code ${_exit}, expected ${EXPECT_EXIT}\nstdout:\n${_out}\nstderr:\n${_err}")
endif()
if(MATCH MATCHES "^json:([^=]+)=(.*)$")
  set(_key ${CMAKE_MATCH_1})
  set(_want ${CMAKE_MATCH_2})
  string(JSON _type TYPE "${_out}")
  if(_type STREQUAL "ARRAY")
    string(JSON _got GET "${_out}" 0 ${_key})
  else()
    string(JSON _got GET "${_out}" ${_key})
  endif()
  if(NOT _got STREQUAL _want)
    message(FATAL_ERROR "${_key} is \"${_got}\", expected \"${_want}\"\n${_out}")
  endif()
else()
  if(NOT "${_out}${_err}" MATCHES "${MATCH}")
    message(FATAL_ERROR "output does not match \"${MATCH}\"\nstdout:\n${_out}\nstderr:\n${_err}")
  endif()
endif()
