# End-to-end tests of `kerneleval compile` (through the real kerneleval-worker).
# Included from tests/cli/CMakeLists.txt, this file registers the tests; run with
# `cmake -P` (as each test does), it is the checker: it runs the CLI and checks the
# exit code, stdout/stderr (CMake regexes) and, optionally, that a file was written.
#
# Checker inputs: KERNELEVAL, WORKER, COMPILE_ARGS (after `compile`, separated by '^'),
# EXPECT_RC, optional EXPECT_STDOUT, EXPECT_STDERR, EXPECT_NOT_STDOUT, EXPECT_FILE.

if(CMAKE_SCRIPT_MODE_FILE)
  set(args compile --worker ${WORKER})
  if(DEFINED COMPILE_ARGS AND NOT COMPILE_ARGS STREQUAL "")
    string(REPLACE "^" ";" extra_args "${COMPILE_ARGS}")
    list(APPEND args ${extra_args})
  endif()
  if(DEFINED EXPECT_FILE)
    file(REMOVE ${EXPECT_FILE})
  endif()
  execute_process(COMMAND ${KERNELEVAL} ${args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  list(JOIN args " " args)
  if(NOT rc STREQUAL EXPECT_RC)
    message(FATAL_ERROR "kerneleval ${args}: exit ${rc}, expected ${EXPECT_RC}\n"
                        "stdout:\n${out}\nstderr:\n${err}")
  endif()
  if(DEFINED EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
    message(FATAL_ERROR "kerneleval ${args}: stdout does not match `${EXPECT_STDOUT}`:\n${out}")
  endif()
  if(DEFINED EXPECT_NOT_STDOUT AND out MATCHES "${EXPECT_NOT_STDOUT}")
    message(FATAL_ERROR "kerneleval ${args}: stdout matches `${EXPECT_NOT_STDOUT}`:\n${out}")
  endif()
  if(DEFINED EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
    message(FATAL_ERROR "kerneleval ${args}: stderr does not match `${EXPECT_STDERR}`:\n${err}")
  endif()
  if(DEFINED EXPECT_FILE AND NOT EXISTS ${EXPECT_FILE})
    message(FATAL_ERROR "kerneleval ${args}: did not write ${EXPECT_FILE}")
  endif()
  return()
endif()

if(NOT TARGET kerneleval OR NOT TARGET kerneleval-worker OR NOT TARGET kerneleval_compile)
  return()
endif()

set(KERNELEVAL_COMPILE_DATA ${CMAKE_CURRENT_LIST_DIR}/compile_data)

# kerneleval_compile_cli_test(NAME ARGS RC [STDOUT re] [NOT_STDOUT re] [STDERR re] [FILE path])
function(kerneleval_compile_cli_test name args rc)
  cmake_parse_arguments(PARSE_ARGV 3 check "" "STDOUT;NOT_STDOUT;STDERR;FILE" "")
  set(defines -DKERNELEVAL=$<TARGET_FILE:kerneleval> -DWORKER=$<TARGET_FILE:kerneleval-worker>
              "-DCOMPILE_ARGS=${args}" -DEXPECT_RC=${rc})
  foreach(key STDOUT NOT_STDOUT STDERR)
    if(DEFINED check_${key})
      list(APPEND defines "-DEXPECT_${key}=${check_${key}}")
    endif()
  endforeach()
  if(DEFINED check_FILE)
    list(APPEND defines "-DEXPECT_FILE=${check_FILE}")
  endif()
  add_test(NAME cli.compile.${name}
           COMMAND ${CMAKE_COMMAND} ${defines} -P ${CMAKE_CURRENT_FUNCTION_LIST_FILE})
  set_tests_properties(cli.compile.${name} PROPERTIES TIMEOUT 120)
endfunction()

# Success: a header line and one row per kernel (regs, smem 4000, 256 threads, 3 params).
kerneleval_compile_cli_test(ok "${KERNELEVAL_COMPILE_DATA}/ok.cu" 0
  STDOUT "ok\\.cu: compiled for sm_90 in [0-9.]+ s \\(NVRTC [0-9]+\\.[0-9]+\\)\n.*\nstage +[0-9]+ +4000 +0 +0/0 +[0-9]+ +256 +3/20B +const float\\* __restrict__ in 0:8, float\\* out 8:8, int n 16:4")
# Device globals are listed (the prelude's constants, in every module, are not).
kerneleval_compile_cli_test(device_globals "${KERNELEVAL_COMPILE_DATA}/globals.cu" 0
  STDOUT "\ndevice globals \\(hidden from other programs while timed, zeroed when unloaded\\): launches\n")
kerneleval_compile_cli_test(no_device_globals "${KERNELEVAL_COMPILE_DATA}/ok.cu" 0
  NOT_STDOUT "device globals")
# A compile error is exit 1 with the user's line and column, and the compiler log.
kerneleval_compile_cli_test(error_line "${KERNELEVAL_COMPILE_DATA}/error.cu" 1
  STDOUT "compile FAILED.*line 7:12 +error +identifier \"not_declared_anywhere\" is undefined.*compiler log:\nkernel\\.cu\\(7\\): error")
# Options from the allow-list reach NVRTC; others are bad input (exit 2) naming the option.
kerneleval_compile_cli_test(allowed_option "${KERNELEVAL_COMPILE_DATA}/ok.cu^--option^-use_fast_math^--option=-maxrregcount=32" 0
  STDOUT "NVRTC [0-9.]+, --maxrregcount=32 --use_fast_math\\)")
kerneleval_compile_cli_test(refused_option "${KERNELEVAL_COMPILE_DATA}/ok.cu^--option=-I/etc" 2
  STDERR "compile option \"-I/etc\" is not allowed: include paths")
kerneleval_compile_cli_test(refused_debug_option "${KERNELEVAL_COMPILE_DATA}/ok.cu^--option^-G" 2
  STDERR "compile option \"-G\" is not allowed: debug builds")
kerneleval_compile_cli_test(bad_arch "${KERNELEVAL_COMPILE_DATA}/ok.cu^--arch^sm90" 2
  STDERR "architecture \"sm90\" is not sm_XX")
# Well spelled, but unknown to NVRTC: bad input too, with the toolkit's version.
kerneleval_compile_cli_test(unknown_arch "${KERNELEVAL_COMPILE_DATA}/ok.cu^--arch^sm_999" 2
  STDERR "invalid value for --gpu-architecture.*\\(NVRTC [0-9]+\\.[0-9]+, arch sm_999\\)")
# JSON: proto field names, every field present, no binary unless asked.
kerneleval_compile_cli_test(json "${KERNELEVAL_COMPILE_DATA}/ok.cu^--json" 0
  STDOUT "\"success\": true,.*\"mangled_name\": \"stage\",.*\"static_shared_bytes\": 4000,.*\"max_threads_per_block\": 256.*\"cubin\": \"\",.*\"cache_hit\": false,"
  NOT_STDOUT "\"ptx\": \"[^\"]")
# JSON device_globals are the source's own, as in the text (the prelude's constants left out).
kerneleval_compile_cli_test(json_device_globals "${KERNELEVAL_COMPILE_DATA}/globals.cu^--json" 0
  STDOUT "\"device_globals\": \\[\n  \"launches\"\n \\]"
  NOT_STDOUT "INFINITY|FLT_MAX")
kerneleval_compile_cli_test(json_error "${KERNELEVAL_COMPILE_DATA}/error.cu^--json" 1
  STDOUT "\"success\": false,.*\"line\": 7,.*\"column\": 12,")
kerneleval_compile_cli_test(json_include_ptx "${KERNELEVAL_COMPILE_DATA}/ok.cu^--json^--include-ptx" 0
  STDOUT "\"ptx\": \"//\\\\n// Generated by NVIDIA NVVM Compiler")
# PTX-only architectures and output files.
kerneleval_compile_cli_test(virtual_arch "${KERNELEVAL_COMPILE_DATA}/ok.cu^--arch^compute_90^--json" 0
  STDOUT "\"arch\": \"compute_90\",.*\"cubin\": \"\",")
kerneleval_compile_cli_test(ptx_file "${KERNELEVAL_COMPILE_DATA}/ok.cu^--ptx^${CMAKE_CURRENT_BINARY_DIR}/compile_ok.ptx" 0
  FILE "${CMAKE_CURRENT_BINARY_DIR}/compile_ok.ptx")
kerneleval_compile_cli_test(cubin_file "${KERNELEVAL_COMPILE_DATA}/ok.cu^--cubin^${CMAKE_CURRENT_BINARY_DIR}/compile_ok.cubin" 0
  FILE "${CMAKE_CURRENT_BINARY_DIR}/compile_ok.cubin")
# Bad input: a missing file is a usage error.
kerneleval_compile_cli_test(missing_file "${KERNELEVAL_COMPILE_DATA}/no_such.cu" 2
  STDERR "cannot read .*no_such\\.cu")
