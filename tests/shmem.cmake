# symshmem's tests: the runtime core (heap, RMA, atomics, signals, waits), the
# buddy allocator, symrun's failure handling and misuse messages.
# Multi-PE tests run through symrun at 1, 2 and 4 PEs (4 oversubscribes a
# 2-core machine on purpose: waits must yield).

# The allocator against a reference model (links src/util/buddy.c directly).
sym_unit_test(shmem_buddy SOURCES ${PROJECT_SOURCE_DIR}/src/util/buddy.c)
# The libcrypto wrappers against published vectors, and tampering refused.
sym_unit_test(util_crypto SOURCES ${PROJECT_SOURCE_DIR}/src/util/crypto.c LIBS OpenSSL::Crypto)
# The put/get copy (streaming stores, the measured threshold): every byte and guard.
sym_unit_test(util_copy LIBS symutil)

# shmem_pe_exe(name [SOURCES ...]): a multi-PE test program.
function(shmem_pe_exe name)
  cmake_parse_arguments(T "" "" "SOURCES" ${ARGN})
  add_executable(${name} ${name}.c ${T_SOURCES})
  target_link_libraries(${name} PRIVATE symshmem m)
endfunction()

# shmem_pe_run(test target [NPES n...] [ARGS ...] [ENV VAR=value...]): run
# `target ARGS` through symrun at each PE count, with the environment given
# (the heap-size variables are cleared first, so the caller's shell cannot
# change what a test measures).
function(shmem_pe_run tname target)
  cmake_parse_arguments(T "" "" "NPES;ARGS;ENV" ${ARGN})
  if(NOT T_NPES)
    set(T_NPES 1 2 4)
  endif()
  set(envmod "SYMTRAIN_SYMMETRIC_SIZE=unset:" "SHMEM_SYMMETRIC_SIZE=unset:")
  foreach(e ${T_ENV})
    list(APPEND envmod "${e}")
  endforeach()
  list(TRANSFORM envmod REPLACE "^([A-Z_]+)=([^u].*|u[^n].*|)$" "\\1=set:\\2")
  foreach(n ${T_NPES})
    add_test(NAME ${tname}_np${n}
      COMMAND ${SYMRUN} -n ${n} --timeout ${SYM_TEST_TIMEOUT} $<TARGET_FILE:${target}> ${T_ARGS})
    set_tests_properties(${tname}_np${n} PROPERTIES TIMEOUT ${SYM_CTEST_TIMEOUT} SKIP_RETURN_CODE 77
      ENVIRONMENT_MODIFICATION "${envmod}" LABELS shmem)
  endforeach()
endfunction()

# The heap API on a small heap (exhaustion is reached for real), then the heap
# size read from each variable and suffix.
shmem_pe_exe(shmem_heap)
target_include_directories(shmem_heap PRIVATE ${PROJECT_SOURCE_DIR}/src) # util/util.h
target_link_libraries(shmem_heap PRIVATE symutil) # sym__fmt_size (libsymshmem does not export it)
shmem_pe_run(shmem_heap shmem_heap ARGS api 4194304 ENV SYMTRAIN_SYMMETRIC_SIZE=4M)
shmem_pe_run(shmem_heap_size_M shmem_heap ARGS sizes 3145728 ENV SHMEM_SYMMETRIC_SIZE=3M)
shmem_pe_run(shmem_heap_size_k shmem_heap ARGS sizes 1572864 ENV SHMEM_SYMMETRIC_SIZE=1536k)
shmem_pe_run(shmem_heap_size_G shmem_heap ARGS sizes 1073741824 ENV SYMTRAIN_SYMMETRIC_SIZE=1G)
shmem_pe_run(shmem_heap_size_frac shmem_heap ARGS sizes 2621440 ENV SHMEM_SYMMETRIC_SIZE=2.5MiB)
shmem_pe_run(shmem_heap_size_bytes shmem_heap ARGS sizes 16384 ENV SHMEM_SYMMETRIC_SIZE=12345)
shmem_pe_run(shmem_heap_size_precedence shmem_heap ARGS sizes 2097152
  ENV SHMEM_SYMMETRIC_SIZE=64M SYMTRAIN_SYMMETRIC_SIZE=2M)

# Every RMA type and form, into the heap, globals and statics.
shmem_pe_exe(shmem_rma)
shmem_pe_run(shmem_rma shmem_rma)

# Atomics: contention totals, every type x operation x flavour, deprecated
# names, compare_swap and shmem_set_lock mutual exclusion.
shmem_pe_exe(shmem_amo)
shmem_pe_run(shmem_amo shmem_amo)

# wait_until / test in every form and type, status masks, remote wake-up.
shmem_pe_exe(shmem_wait)
shmem_pe_run(shmem_wait shmem_wait)

# put_signal in every form (SET/ADD, nbi, ctx, generic), signal_fetch,
# signal_wait_until with every comparison, many PEs adding into one signal.
shmem_pe_exe(shmem_signal)
shmem_pe_run(shmem_signal shmem_signal)

# Driver scripts that run symrun as a child: SCRIPT SYMRUN CHILD NPES.
function(shmem_script_test tname script child)
  foreach(n 1 2 4)
    add_test(NAME ${tname}_np${n}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/${script} $<TARGET_FILE:symrun>
              $<TARGET_FILE:${child}> ${n})
    set_tests_properties(${tname}_np${n} PROPERTIES TIMEOUT 200 LABELS shmem
      ENVIRONMENT_MODIFICATION "SYMTRAIN_SYMMETRIC_SIZE=unset:;SHMEM_SYMMETRIC_SIZE=unset:")
  endforeach()
endfunction()

# symrun's failure handling: aborts, SIGKILL, timeouts, global exit, bad
# arguments, --tag-output, --max-restarts; no process or /dev/shm entry left.
shmem_pe_exe(shmem_symrun_child)
shmem_script_test(shmem_symrun shmem_symrun.sh shmem_symrun_child)

# A stopped PE ends the job under --hang-timeout (named; --max-restarts
# restarts it), waiting PEs are not hung, a second SIGTERM kills the PEs.
shmem_script_test(shmem_symrun_liveness shmem_symrun_liveness.sh shmem_symrun_child)

# A bad setting (the fabric's too, on one host) ends the job at once with one
# message naming it and what it takes (src/util/env.c).
shmem_script_test(shmem_settings shmem_settings.sh shmem_symrun_child)

# A failing PE's explanation is never cut off by symrun ending the job, and a
# usage error reads as one (30 runs per case: it was a race).
shmem_script_test(shmem_symrun_output shmem_symrun_output.sh shmem_symrun_child)

# Misuse: one message naming PE, call and cause; the job ends, nothing hangs.
shmem_pe_exe(shmem_misuse_child)
shmem_script_test(shmem_misuse shmem_misuse.sh shmem_misuse_child)

set_tests_properties(shmem_buddy util_crypto util_copy PROPERTIES LABELS shmem)

# symbench prints well-formed tables for every test (cmake/bench.cmake must be
# included before tests/ for the target to exist here).
if(TARGET symbench)
  foreach(n 1 2 4)
    add_test(NAME shmem_symbench_np${n}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/shmem_symbench.sh $<TARGET_FILE:symrun>
              $<TARGET_FILE:symbench> ${n})
    set_tests_properties(shmem_symbench_np${n} PROPERTIES TIMEOUT 200 LABELS shmem)
  endforeach()
endif()

# barrier_all, sync_all and team_sync (world and a split team) release no PE early.
shmem_pe_exe(shmem_barrier)
shmem_pe_run(shmem_barrier shmem_barrier)

# The same with every put and get of 1000 bytes or more copied by streaming
# stores (src/util/copy.c; by default only copies above half the last-level
# cache stream): odd sizes and offsets, and the signal still after the data.
shmem_pe_run(shmem_rma_stream shmem_rma ENV SYMTRAIN_COPY_NT_MIN=1000)
shmem_pe_run(shmem_signal_stream shmem_signal ENV SYMTRAIN_COPY_NT_MIN=1000)

# Operations of zero elements are no-ops whatever their pointers (NULL too):
# every put/get form, team and active-set collectives, the shmemx_ ones; a
# zero-length put-with-signal still updates the signal.
shmem_pe_exe(shmem_zero)
target_link_libraries(shmem_zero PRIVATE Threads::Threads)
shmem_pe_run(shmem_zero shmem_zero)

# Size strings (SYMTRAIN_SYMMETRIC_SIZE and the other size settings): exact
# values for K/M/G/T and fractions of whole bytes; hex, exponents, byte
# fractions and the like refused (src/util/env.c linked directly).
sym_unit_test(shmem_size_parse SOURCES ${PROJECT_SOURCE_DIR}/src/util/env.c
              ${PROJECT_SOURCE_DIR}/src/util/error.c)
set_tests_properties(shmem_size_parse PROPERTIES LABELS shmem)
shmem_pe_exe(shmem_stats)
target_link_libraries(shmem_stats PRIVATE Threads::Threads)
shmem_pe_run(shmem_stats shmem_stats) # shmemx_stats: the runtime counters the metrics show
