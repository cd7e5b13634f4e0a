# symshmem's tests: the runtime core (heap, RMA, atomics, signals, waits), the
# buddy allocator, symrun's failure handling and misuse messages.
# Multi-PE tests run through symrun at 1, 2 and 4 PEs (4 oversubscribes a
# 2-core machine on purpose: waits must yield).

# The allocator against a reference model (links src/util/buddy.c directly).
sym_unit_test(shmem_buddy SOURCES ${PROJECT_SOURCE_DIR}/src/util/buddy.c)
