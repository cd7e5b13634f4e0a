# Tests of the whole OpenSHMEM 1.5 API (issue 3): teams, team collectives for
# every type, contexts and threads, locks, the deprecated calls, C11 generic
# selection, misuse messages, the examples, and programs written the way
# outside conformance suites and benchmarks write them (built with symcc).
# Every test carries the label "api" (ctest -L api). Odd PE counts matter; 4
# PEs oversubscribe a 2-core machine on purpose (waits must yield).
set(API_NPES 1 2 3 4)

# api_pe_test(name [WERROR] [LIBS ...]): a multi-PE test at 1-4 PEs.
function(api_pe_test name)
  cmake_parse_arguments(T "WERROR" "" "LIBS" ${ARGN})
  sym_pe_test(${name} NPES ${API_NPES} LIBS ${T_LIBS})
  if(T_WERROR)
    target_compile_options(${name} PRIVATE -Werror)
  endif()
  foreach(n ${API_NPES})
    set_tests_properties(${name}_np${n} PROPERTIES LABELS api)
  endforeach()
endfunction()

# api_script_test(name script args...): a driver script at 1-4 PEs (the PE
# count is its last argument).
function(api_script_test name script)
  foreach(n ${API_NPES})
    add_test(NAME ${name}_np${n}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/${script} ${ARGN} ${n})
    set_tests_properties(${name}_np${n} PROPERTIES TIMEOUT 200 LABELS api)
  endforeach()
endfunction()

# Strided splits of every shape, 2-D splits, translate_pe, team_ptr, config,
# create/destroy cycles beyond the slot count.
api_pe_test(api_teams)
# broadcast/collect/fcollect/alltoall(s) and the reductions for every type.
api_pe_test(api_teamcoll)
# Contexts on teams; threads with RMA, atomics, waits and locks.
api_pe_test(api_ctx LIBS Threads::Threads)
# Locks under contention from every PE.
api_pe_test(api_lock)
# start_pes, shmalloc, active-set collectives, _to_all, 1.3 atomics, waits on
# volatile flags (which must compile without a warning).
api_pe_test(api_legacy WERROR)
# Every generic name with every standard type: a wrong or missing selection
# fails the build.
api_pe_test(api_generic WERROR)

# Misuse ends the job with one clear message.
add_executable(api_misuse_child api_misuse_child.c)
target_link_libraries(api_misuse_child PRIVATE symshmem)
api_script_test(api_misuse api_misuse.sh $<TARGET_FILE:symrun> $<TARGET_FILE:api_misuse_child>)

# The classic examples (examples/ring.c, pi.c, circular_shift.c, alltoall.c),
# each run with a check of what it prints.
api_script_test(api_examples api_examples.sh $<TARGET_FILE:symrun> ${PROJECT_BINARY_DIR}/examples)

# Programs written the way outside conformance suites and benchmarks are
# written (tests/conformance/: UH-validation, Sandia-OpenSHMEM and
# specification-example style tests, OSU-style benchmarks), built only with
# the build tree's symcc (and once with the installed one), then run at 2, 3
# and 4 PEs.
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
