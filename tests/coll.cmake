# Collectives: the training collectives (shmemx_*) and the OpenSHMEM ones.
# Odd PE counts matter (partitions, ring neighbours, recursive-doubling folds).
sym_pe_test(coll_allreduce NPES 1 2 3 4)
sym_pe_test(coll_shmemx NPES 1 2 3 4)
sym_pe_test(coll_replica NPES 1 2 3 4)
