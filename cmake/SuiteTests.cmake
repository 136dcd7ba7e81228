# Registers a GoogleTest executable with ctest as one test per suite, not one per test.
#
# gtest_discover_tests gives every test its own process. Most of attnsim's tests load the embedded
# catalog (about 1 MB of YAML) before they assert anything, so per-test processes spent more time
# parsing it again than testing: about 0.1 s per process in the release build and several times that
# under ASan. One process per suite parses it once per suite. Suites named in ONE_BY_ONE keep a test per
# process: their tests are long enough to be worth spreading over the cores (and CI's sanitizer run
# leaves some of them out by name). Those come first in the list, so that ctest -j starts the long
# ones first on a fresh clone, before it has timings of its own.
#
#   attnsim_add_suite_tests(TARGET ONE_BY_ONE Suite1 Suite2 ...)
# ATTNSIM_SUITES_PER_TEST (default 1) puts that many of the other suites in one process: scripts/test.sh's
# sanitizer build, where a process's first catalog parse costs about a second, groups them.
set(ATTNSIM_SUITES_PER_TEST 1 CACHE STRING "GoogleTest suites per ctest entry (ONE_BY_ONE suites excepted)")
function(attnsim_add_suite_tests target)
  cmake_parse_arguments(ARG "" "" "ONE_BY_ONE" ${ARGN})
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  string(REPLACE ";" "," one_by_one "${ARG_ONE_BY_ONE}")
  add_custom_command(
    TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>" -D "CTEST_FILE=${ctest_file}"
            -D "ONE_BY_ONE=${one_by_one}" -D "WORKING_DIRECTORY=${CMAKE_CURRENT_BINARY_DIR}"
            -D "SUITES_PER_TEST=${ATTNSIM_SUITES_PER_TEST}"
            -P "${PROJECT_SOURCE_DIR}/cmake/WriteSuiteTests.cmake"
    BYPRODUCTS "${ctest_file}"
    VERBATIM)
  # Until the first build has written it, ctest says the executable is not built rather than failing to read.
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  file(WRITE "${include_file}"
       "if(EXISTS \"${ctest_file}\")\n  include(\"${ctest_file}\")\nelse()\n"
       "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
