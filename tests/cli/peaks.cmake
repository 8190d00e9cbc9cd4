# End-to-end tests of `kerneleval peaks`. Included from tests/cli/CMakeLists.txt, this file
# registers the tests; run with `cmake -P` (as each test does), it is the checker: it runs
# the CLI and compares exit code, stdout and stderr, so that a test fails on a wrong exit
# code even when the output matches (PASS_REGULAR_EXPRESSION alone ignores exit codes).
#
# Checker inputs: KERNELEVAL (the binary), PEAKS_ARGS (arguments after `peaks`, separated
# by '^'), EXPECT_RC, and optional EXPECT_STDOUT / EXPECT_STDERR (CMake regexes).

if(CMAKE_SCRIPT_MODE_FILE)
  set(args peaks)
  if(DEFINED PEAKS_ARGS AND NOT PEAKS_ARGS STREQUAL "")
    string(REPLACE "^" ";" extra_args "${PEAKS_ARGS}")
    list(APPEND args ${extra_args})
  endif()
  execute_process(COMMAND ${KERNELEVAL} ${args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  list(JOIN args " " args)  # for messages
  if(NOT rc STREQUAL EXPECT_RC)
    message(FATAL_ERROR "kerneleval ${args}: exit ${rc}, expected ${EXPECT_RC}\n"
                        "stdout:\n${out}\nstderr:\n${err}")
  endif()
  if(DEFINED EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
    message(FATAL_ERROR "kerneleval ${args}: stdout does not match `${EXPECT_STDOUT}`:\n${out}")
  endif()
  if(DEFINED EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
    message(FATAL_ERROR "kerneleval ${args}: stderr does not match `${EXPECT_STDERR}`:\n${err}")
  endif()
  return()
endif()

if(NOT TARGET kerneleval)
  return()
endif()

# kerneleval_peaks_cli_test(NAME ARGS RC [STDOUT regex] [STDERR regex])
function(kerneleval_peaks_cli_test name args rc)
  cmake_parse_arguments(PARSE_ARGV 3 check "" "STDOUT;STDERR" "")
  set(defines -DKERNELEVAL=$<TARGET_FILE:kerneleval> "-DPEAKS_ARGS=${args}" -DEXPECT_RC=${rc})
  if(DEFINED check_STDOUT)
    list(APPEND defines "-DEXPECT_STDOUT=${check_STDOUT}")
  endif()
  if(DEFINED check_STDERR)
    list(APPEND defines "-DEXPECT_STDERR=${check_STDERR}")
  endif()
  add_test(NAME cli.peaks.${name}
           COMMAND ${CMAKE_COMMAND} ${defines} -P ${CMAKE_CURRENT_FUNCTION_LIST_FILE})
  set_tests_properties(cli.peaks.${name} PROPERTIES TIMEOUT 30)
endfunction()

# The whole table: one row per GPU with CC, SMs, memory [GiB], bandwidth [TB/s], fp32 and
# dense fp16/bf16/fp8 tensor peaks [TFLOP/s], L2 [MiB].
kerneleval_peaks_cli_test(table "" 0
  STDOUT "H100 SXM +9\\.0 +132 +80 +3\\.350 +67\\.0 +989\\.4 +989\\.4 +1978\\.9 +50\n")
kerneleval_peaks_cli_test(table_lists_a100_without_fp8 "" 0
  STDOUT "A100 SXM4 40GB +8\\.0 +108 +40 +1\\.555 +19\\.5 +312\\.0 +312\\.0 +- +40\n")
# One GPU by its driver name, any case: every figure with its source.
kerneleval_peaks_cli_test(gpu_by_driver_name "nvidia h100 80gb hbm3" 0
  STDOUT "COMPUTE_TYPE_BF16_TC +989\\.400 TFLOP/s +\\[NVIDIA H100 Tensor Core GPU Architecture whitepaper")
kerneleval_peaks_cli_test(gpu_by_canonical_name "h200" 0
  STDOUT "bandwidth +4\\.800 TB/s +\\[NVIDIA H200")
# JSON keeps the .proto field names.
kerneleval_peaks_cli_test(json_gpu "H100 SXM^--json" 0
  STDOUT "\"memory_bandwidth_bytes_per_second\": 3350000000000,")
kerneleval_peaks_cli_test(json_table "--json" 0
  STDOUT "\"gpus\": \\[.*\"driver_names\": \\[\n +\"NVIDIA GB200\"")
# Words of one GPU's name find it; a name several GPUs share lists them (exit 2).
kerneleval_peaks_cli_test(gpu_by_partial_name "5090" 0
  STDOUT "^RTX 5090\n")
kerneleval_peaks_cli_test(ambiguous_name "H100" 2
  STDOUT "^$" STDERR "\"H100\" could be any of: H100 SXM, H100 PCIe, H100 NVL")
# An unknown name is a usage error: exit 2 and a message, nothing on stdout.
kerneleval_peaks_cli_test(unknown_name "Voodoo2" 2
  STDOUT "^$" STDERR "no GPU named \"Voodoo2\"")
# Override tables: the checked-in file loads; a missing file is exit 2.
kerneleval_peaks_cli_test(table_file "B200^--table^${PROJECT_SOURCE_DIR}/gpu_peaks/gpu_peaks.textproto" 0
  STDOUT "SMs +148\n")
kerneleval_peaks_cli_test(missing_table_file "--table^${CMAKE_CURRENT_BINARY_DIR}/no_such_peaks.textproto" 2
  STDERR "cannot open peak table")
