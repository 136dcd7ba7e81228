# Script mode (cmake -P), run after each link of a test executable by attnsim_add_suite_tests
# (SuiteTests.cmake): lists its tests and writes the ctest file that registers them, one entry per
# suite, or per test for the suites in ONE_BY_ONE (comma-separated).
cmake_minimum_required(VERSION 3.20)
execute_process(
  COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
  OUTPUT_VARIABLE listing
  RESULT_VARIABLE status
  TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${status}):\n${listing}")
endif()
string(REPLACE "," ";" one_by_one "${ONE_BY_ONE}")

# The listing: "Suite." at the left margin, then "  Test" lines; parameterised ones carry "  # GetParam() = ...".
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
set(singles "")
set(suite "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE "  #.*$" "" line "${line}")
  if(line MATCHES "^([^ ].*)\\.$")
    set(suite "${CMAKE_MATCH_1}")
    if(NOT suite IN_LIST one_by_one AND NOT suite MATCHES "^DISABLED_")
      list(APPEND suites "${suite}")
    endif()
  elseif(line MATCHES "^  ([^ ]+)$" AND suite IN_LIST one_by_one)
    set(test "${CMAKE_MATCH_1}")
    if(NOT test MATCHES "^DISABLED_")
      list(APPEND singles "${suite}.${test}")
    endif()
  endif()
endforeach()
foreach(name IN LISTS one_by_one)
  if(NOT listing MATCHES "(^|\n)${name}\\.\n")
    message(FATAL_ERROR "WriteSuiteTests: ONE_BY_ONE names '${name}', which ${TEST_EXECUTABLE} does not have")
  endif()
endforeach()

# The one-by-one suites in the order ONE_BY_ONE names them (the caller lists the longest first).
set(ordered "")
foreach(name IN LISTS one_by_one)
  foreach(test IN LISTS singles)
    string(FIND "${test}" "${name}." at)
    if(at EQUAL 0)
      list(APPEND ordered "${test}")
    endif()
  endforeach()
endforeach()
set(out "# Written by cmake/WriteSuiteTests.cmake from ${TEST_EXECUTABLE} --gtest_list_tests.\n")
foreach(test IN LISTS ordered)
  string(APPEND out "add_test([==[${test}]==] \"${TEST_EXECUTABLE}\" [==[--gtest_filter=${test}]==])\n")
  string(APPEND out "set_tests_properties([==[${test}]==] PROPERTIES WORKING_DIRECTORY \"${WORKING_DIRECTORY}\")\n")
endforeach()
foreach(suite IN LISTS suites)
  string(APPEND out "add_test([==[${suite}]==] \"${TEST_EXECUTABLE}\" [==[--gtest_filter=${suite}.*]==])\n")
  string(APPEND out "set_tests_properties([==[${suite}]==] PROPERTIES WORKING_DIRECTORY \"${WORKING_DIRECTORY}\")\n")
endforeach()
file(WRITE "${CTEST_FILE}" "${out}")
