# Collectives: the training collectives (shmemx_*) and the OpenSHMEM ones.
# Odd PE counts matter (partitions, ring neighbours, recursive-doubling folds).
sym_pe_test(coll_allreduce NPES 1 2 3 4)
sym_pe_test(coll_shmemx NPES 1 2 3 4)
sym_pe_test(coll_replica NPES 1 2 3 4)

# Installing to a prefix the build was not configured for, moving the tree,
# running the installed tools, then building outside programs with symcc,
# pkg-config (symshmem, symtrain) and find_package(symshmem).
add_test(NAME tools_install COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools_install.sh
         ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR} $<BOOL:${SYM_HAVE_TRAIN}>)
# Not under make test-sanitize: it also builds outside programs with plain cc
# (pkg-config, find_package), which cannot load a sanitizer build's library.
set_tests_properties(tools_install PROPERTIES TIMEOUT 300 LABELS "tools;no-sanitize")

# --help of symrun, symbench and symtrain: usage on stdout, exit 0, every environment
# variable src/ reads; usage errors on stderr with exit 2.
add_test(NAME tools_help COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools_help.sh
         $<TARGET_FILE:symrun> $<TARGET_FILE:symbench> ${PROJECT_SOURCE_DIR}
         $<$<TARGET_EXISTS:symtrain_cli>:$<TARGET_FILE:symtrain_cli>>)
set_tests_properties(tools_help PROPERTIES TIMEOUT 120 LABELS tools)

# The public libraries export their API only; the version macros come from the
# project version and the functions return them; error codes do not collide.
set(_public_libs $<TARGET_FILE:symshmem>)
if(TARGET symtrain)
  list(APPEND _public_libs $<TARGET_FILE:symtrain>)
endif()
if(TARGET symgpu)
  list(APPEND _public_libs $<TARGET_FILE:symgpu>)
endif()
add_test(NAME tools_exports COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools_exports.sh ${_public_libs})
set_tests_properties(tools_exports PROPERTIES TIMEOUT 60 LABELS tools)
add_executable(tools_version tools_version.c)
target_compile_definitions(tools_version PRIVATE WANT_VERSION="${PROJECT_VERSION}")
target_link_libraries(tools_version PRIVATE symshmem)
if(TARGET symtrain)
  target_compile_definitions(tools_version PRIVATE HAVE_TRAIN=1)
  target_link_libraries(tools_version PRIVATE symtrain)
endif()
add_test(NAME tools_version COMMAND tools_version)
set_tests_properties(tools_version PROPERTIES TIMEOUT 60 LABELS tools)

# The documents name only paths that exist in the repository.
add_test(NAME docs_paths COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/docs_paths.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(docs_paths PROPERTIES TIMEOUT 60 LABELS tools)
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
  # not under make test-sanitize: valgrind and AddressSanitizer do not stack
  set_tests_properties(coll_nb_valgrind_np2 PROPERTIES TIMEOUT 200 LABELS no-sanitize)
endif()
