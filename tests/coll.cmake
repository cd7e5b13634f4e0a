# Collectives: the training collectives (shmemx_*) and the OpenSHMEM ones.
# Odd PE counts matter (partitions, ring neighbours, recursive-doubling folds).
sym_pe_test(coll_allreduce NPES 1 2 3 4)
sym_pe_test(coll_shmemx NPES 1 2 3 4)
sym_pe_test(coll_replica NPES 1 2 3 4)

# Installing, then building an outside program with symcc, pkg-config and
# find_package(symshmem).
add_test(NAME tools_install COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools_install.sh
         ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(tools_install PROPERTIES TIMEOUT 300 LABELS tools)

# Private all-reduces above 64 KiB (the direct algorithm reading peers' memory)
# on a sub-team, then on the world: whether peers can be read is per team, and
# members must not disagree about it (they hung). A hang must fail fast: a
# short symrun timeout. Also with the reads refused (SYMTRAIN_CMA=0: staged).
add_executable(coll_subteam coll_subteam.c)
target_link_libraries(coll_subteam PRIVATE symshmem m)
foreach(n 2 3 4)
  foreach(cma 1 0)
    set(tn coll_subteam_np${n})
    if(cma EQUAL 0)
      set(tn coll_subteam_nocma_np${n})
    endif()
    add_test(NAME ${tn} COMMAND ${SYMRUN} -n ${n} --timeout 60 $<TARGET_FILE:coll_subteam>)
    set_tests_properties(${tn} PROPERTIES TIMEOUT 100 ENVIRONMENT "SYMTRAIN_CMA=${cma}")
  endforeach()
endforeach()

# Non-blocking requests: explicit lifetime (test/wait complete, free
# releases), waitall, testany, the algorithm captured at creation, team
# destroy and finalize completing what is outstanding.
sym_pe_test(coll_nb NPES 1 2 3 4)
sym_pe_test(coll_nb_finalize NPES 1 2 4)
# The same under valgrind at 2 PEs (about 10 s), where it is installed: a
# request used after it was freed is an error even when the bytes still look right.
find_program(VALGRIND valgrind)
if(VALGRIND)
  add_test(NAME coll_nb_valgrind_np2
    COMMAND ${SYMRUN} -n 2 --timeout 180 ${VALGRIND} -q --error-exitcode=9 $<TARGET_FILE:coll_nb>)
  set_tests_properties(coll_nb_valgrind_np2 PROPERTIES TIMEOUT 200)
endif()
