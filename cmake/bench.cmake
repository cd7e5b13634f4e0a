# symbench: OSU-style micro-benchmarks of symshmem (tools/symbench.c). The
# baselines it is compared with (Open MPI's OpenSHMEM and MPI) are built by
# bench/run_shmem.sh with the compilers Open MPI ships, not by CMake.
add_executable(symbench tools/symbench.c tools/symbench_coll.c)
target_link_libraries(symbench PRIVATE symshmem)
install(TARGETS symbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# sym_redistribute beside the shmemx collectives (bench/dtensor/redistribute.c;
# run it with symrun, docs/performance.md has the table).
if(TARGET symtrain)
  add_executable(bench_redistribute bench/dtensor/redistribute.c)
  target_link_libraries(bench_redistribute PRIVATE symtrain)
endif()
