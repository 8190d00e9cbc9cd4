# `kerneleval problems list|show` end to end, on the source tree's problems/.
# Included from tests/cli/CMakeLists.txt.
if(TARGET kerneleval)
  set(_problems_dir ${PROJECT_SOURCE_DIR}/problems)
  set(_check ${CMAKE_CURRENT_LIST_DIR}/problems_check.cmake)
  # name; expected exit code; a JSON query ("key=value" on the output) or
  # a regular expression the output must match; the command's arguments.
  function(kerneleval_problems_cli_test name exit_code match)
    string(REPLACE ";" "|" _args "${ARGN}")
    add_test(NAME cli.problems.${name}
             COMMAND ${CMAKE_COMMAND} -DKERNELEVAL=$<TARGET_FILE:kerneleval> "-DARGS=${_args}"
                     -DEXPECT_EXIT=${exit_code} "-DMATCH=${match}" -P ${_check})
    set_tests_properties(cli.problems.${name} PROPERTIES TIMEOUT 60)
  endfunction()

  kerneleval_problems_cli_test(list 0 "softmax +Row-wise softmax +level1"
    problems list --problems-dir ${_problems_dir})
  kerneleval_problems_cli_test(list_tag 0 "^ID +TITLE +TAGS\n(.*\n)?matmul +Matrix multiplication"
    problems list --tag gemm --problems-dir ${_problems_dir})
  kerneleval_problems_cli_test(list_json 0
    "\"id\": \"matmul\",\n *\"title\": \"Matrix multiplication \\(fp32\\)\",\n *\"tags\": \\["
    problems list --json --problems-dir ${_problems_dir})
  kerneleval_problems_cli_test(show 0
    "  // @launch my_kernel<<<ROWS, 256>>>\\(x, y, ROWS, COLS\\)\n.*correctness +long_rows +ROWS=5, COLS=30011"
    problems show softmax --problems-dir ${_problems_dir})
  kerneleval_problems_cli_test(show_json 0 "json:example_launch=// @launch my_kernel<<<dim3(ceil_div(N, 64), ceil_div(M, 64)), 256>>>(A, B, C, M, N, K)"
    problems show matmul --json --problems-dir ${_problems_dir})
  kerneleval_problems_cli_test(show_prompt 0 "^# Row sums\n.*## Launching"
    problems show row_sum --prompt --problems-dir ${_problems_dir})
  kerneleval_problems_cli_test(show_unknown 2 "unknown problem \"nope\""
    problems show nope --problems-dir ${_problems_dir})
  kerneleval_problems_cli_test(bad_dir 2 "does not exist"
    problems list --problems-dir ${_problems_dir}/no_such_dir)
  kerneleval_problems_cli_test(show_needs_id 2 "ID is required"
    problems show --problems-dir ${_problems_dir})
endif()
