# Tests of the whole OpenSHMEM 1.5 API (issue 3): teams, team collectives for
# every type, contexts and threads, locks, the deprecated calls, C11 generic
# selection, misuse messages, the examples, and programs written the way
# outside conformance suites and benchmarks write them (built with symcc).
# Odd PE counts matter; 4 PEs oversubscribe a 2-core machine on purpose.
sym_pe_test(api_teams NPES 1 2 3 4)
set_tests_properties(api_teams_np1 api_teams_np2 api_teams_np3 api_teams_np4
  PROPERTIES LABELS api)
sym_pe_test(api_teamcoll NPES 1 2 3 4)
set_tests_properties(api_teamcoll_np1 api_teamcoll_np2 api_teamcoll_np3 api_teamcoll_np4
  PROPERTIES LABELS api)
sym_pe_test(api_ctx NPES 1 2 3 4 LIBS Threads::Threads)
set_tests_properties(api_ctx_np1 api_ctx_np2 api_ctx_np3 api_ctx_np4 PROPERTIES LABELS api)
sym_pe_test(api_lock NPES 1 2 3 4)
set_tests_properties(api_lock_np1 api_lock_np2 api_lock_np3 api_lock_np4 PROPERTIES LABELS api)
sym_pe_test(api_legacy NPES 1 2 3 4)
target_compile_options(api_legacy PRIVATE -Werror) # volatile flags must be accepted silently
set_tests_properties(api_legacy_np1 api_legacy_np2 api_legacy_np3 api_legacy_np4
  PROPERTIES LABELS api)
sym_pe_test(api_generic NPES 1 2 3 4)
target_compile_options(api_generic PRIVATE -Werror) # a wrong or missing selection fails the build
set_tests_properties(api_generic_np1 api_generic_np2 api_generic_np3 api_generic_np4
  PROPERTIES LABELS api)
add_executable(api_misuse_child api_misuse_child.c)
target_link_libraries(api_misuse_child PRIVATE symshmem)
foreach(n 1 2 3 4)
  add_test(NAME api_misuse_np${n}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/api_misuse.sh $<TARGET_FILE:symrun>
            $<TARGET_FILE:api_misuse_child> ${n})
  set_tests_properties(api_misuse_np${n} PROPERTIES TIMEOUT 200 LABELS api)
endforeach()

# The classic examples (examples/ring.c, pi.c, circular_shift.c, alltoall.c),
# each run with a check of what it prints.
foreach(n 1 2 3 4)
  add_test(NAME api_examples_np${n}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/api_examples.sh $<TARGET_FILE:symrun>
            ${PROJECT_BINARY_DIR}/examples ${n})
  set_tests_properties(api_examples_np${n} PROPERTIES TIMEOUT 200 LABELS api)
endforeach()

# Programs written the way outside conformance suites and benchmarks are
# written (tests/conformance/: UH-validation, Sandia-OpenSHMEM and
# specification-example style tests, OSU-style benchmarks), built only with
# the build tree's symcc, once, then run at 2, 3 and 4 PEs.
add_test(NAME api_conformance_build
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/conformance/run.sh build ${PROJECT_BINARY_DIR}
          ${PROJECT_BINARY_DIR}/conformance)
set_tests_properties(api_conformance_build PROPERTIES TIMEOUT 300 LABELS api
  FIXTURES_SETUP api_conformance)
foreach(n 2 3 4)
  add_test(NAME api_conformance_np${n}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/conformance/run.sh run ${PROJECT_BINARY_DIR}
            ${PROJECT_BINARY_DIR}/conformance ${n})
  set_tests_properties(api_conformance_np${n} PROPERTIES TIMEOUT 300 LABELS api
    FIXTURES_REQUIRED api_conformance)
endforeach()
