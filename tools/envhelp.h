/*
 * envhelp.h — the environment variables a PE reads, as the --help of symrun,
 * symbench and symtrain lists them: one text, so they never disagree.
 * tests/tools_help.sh checks it against every variable src/ reads.
 */
#ifndef SYM_TOOLS_ENVHELP_H
#define SYM_TOOLS_ENVHELP_H

/* What libsymshmem reads in every PE (and libsymgpu in programs that use the GPU). */
#define SYM_ENV_HELP_RUNTIME                                                                 \
    "environment, read by every PE (symrun passes its own environment on):\n"                \
    "  SYMTRAIN_SYMMETRIC_SIZE  symmetric heap per PE, e.g. 512M, 2G (default 512M)\n"       \
    "  SHMEM_SYMMETRIC_SIZE     the same, the standard's name (SYMTRAIN_ wins if both)\n"   \
    "  SYMTRAIN_VERBOSE=1       each PE says what it chose at start-up\n"                    \
    "  SYMTRAIN_ALLREDUCE_ALGO  auto|direct|ring|rd: force the all-reduce algorithm\n"       \
    "  SYMTRAIN_ONESHOT_MAX     largest all-reduce (bytes) that pushes in one shot,\n"       \
    "                           instead of the tuned table (benchmarks)\n"                  \
    "  SYMTRAIN_CMA=0           never read peers' private buffers with process_vm_readv\n"  \
    "                           (stage them through symmetric memory)\n"                    \
    "  SYMTRAIN_COPY_NT_MIN     puts/gets of at least this size use streaming stores\n"     \
    "                           (default: measured at the first copy of 512K or more,\n"   \
    "                           else half the last-level cache; 0: never)\n"               \
    "  SYMTRAIN_HOST_ID         PEs with the same value count as one host\n"                \
    "  SYMTRAIN_HOST_SIZE=K     tests: count each K consecutive PEs as one host\n"          \
    " start-up (the bootstrap):\n"                                                         \
    "  SYMTRAIN_BOOTSTRAP       symrun|pmix|env|single (default: from the variables below)\n" \
    "  SYMTRAIN_BOOT_FD, SYMTRAIN_RANK, SYMTRAIN_SIZE\n"                                    \
    "                           set by symrun for each PE (with SYMTRAIN_RESTART_COUNT,\n" \
    "                           and SYMTRAIN_HEARTBEAT_FD under --hang-timeout)\n"          \
    "  SYMTRAIN_MEMCKPT_FD      set by symrun: the memory file it holds across restarts\n"    \
    "                           for in-memory snapshots (symtrain train --mem-ckpt-every)\n" \
    "  SYMTRAIN_MEMCKPT_SOCKET  jobs symrun does not start: the socket of the host's\n"       \
    "                           `symtrain memstore SOCKET`, which holds that memory file\n"   \
    "  SYMTRAIN_MEMCKPT_CHUNK   across hosts: the pieces a snapshot's copy to its buddy\n"  \
    "                           goes in (default 4M; the PEs take the largest asked)\n"    \
    "  SYMTRAIN_RESTART_COUNT   the attempt (0 the first; set by symrun; a launcher's\n"     \
    "                           TORCHELASTIC_RESTART_COUNT stands in for it)\n"             \
    "  SYMTRAIN_DYING_PIDS      set by symrun: the last attempt's PEs still ending, which\n" \
    "                           a restart waits for only for the checkpoint lock and a GPU\n" \
    "  SYMTRAIN_SPARE_FD        set by symrun --spare: the pipe a spare PE waits on, its\n"  \
    "                           start-up done, until a restart takes it over\n"             \
    "  PMIX_RANK, PMIX_NAMESPACE  set by PMIx launchers (mpirun, srun --mpi=pmix)\n"        \
    "  RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT\n"                                       \
    "                           torchrun-style start across hosts (the env bootstrap)\n"    \
    "  PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE, PET_MASTER_ADDR, PET_MASTER_PORT\n"  \
    "                           Kubeflow's (PyTorchJob, TrainJob): rank = PET_NODE_RANK x\n" \
    "                           PET_NPROC_PER_NODE + LOCAL_RANK (the process in its pod)\n" \
    "  SYMTRAIN_JOB_TOKEN       the job's secret, the same on every rank (env bootstrap)\n" \
    "  SYMTRAIN_BOOT_TIMEOUT    seconds to wait for every rank (default 120)\n"             \
    " across hosts (libfabric):\n"                                                         \
    "  SYMTRAIN_OFI_PROVIDER    the provider, e.g. tcp, verbs, efa (default: libfabric's\n" \
    "                           first, its native TCP endpoint before emulated ones)\n"     \
    "  SYMTRAIN_OFI_ATOMICS     auto|fabric|am: fabric atomics or active messages\n"        \
    "  SYMTRAIN_WAIT            auto|poll|sleep: does a waiting PE keep polling\n"          \
    "                           (auto: while its host has a CPU per PE)\n"                  \
    " GPUs (shmemx_gpu_init):\n"                                                           \
    "  SYMTRAIN_GPU=D           use GPU D (default: the PE's rank on its host)\n"           \
    "  SYMTRAIN_GPU_SHARE=1     let several PEs share a GPU (tests)\n"                      \
    "  SYMTRAIN_PIPE_VIA_HOST=1 a GPU pipeline's messages through the host (fp32), not\n"  \
    "                           GPU to GPU\n"                                               \
    "  SYMTRAIN_GPU_HEAP_SIZE   GPU symmetric heap per PE (default 1G)\n"                  \
    "  SYMTRAIN_GPU_SCRATCH     the collectives' working memory (default 256M)\n"           \
    "  NVSHMEM_SYMMETRIC_SIZE   NVSHMEM's whole heap, if you must (default: the two above)\n" \
    "  SYMTRAIN_GPU_ALGO        auto|oneshot|twoshot|ring: force the GPU algorithm\n"       \
    "  SYMTRAIN_GPU_BLOCKS      thread blocks per collective (default: tuned)\n"            \
    "  SYMTRAIN_GPU_ONESHOT_MAX, SYMTRAIN_GPU_MIN_CHUNK  override the tuned sizes\n"        \
    "  SYMTRAIN_GPU_PDL=0       no programmatic dependent launch\n"                         \
    "  SYMTRAIN_GPU_TIMEOUT     seconds a GPU wait may take before it fails (default 30)\n" \
    "  SYMTRAIN_GPU_BACKEND     path of libsymgpu_nvshmem.so (default: next to libsymgpu)\n"   \
    "  SYMTRAIN_CUDA_BACKEND    path of libsymtrain_cuda.so, the GPT's GPU part (default:\n" \
    "                           next to libsymtrain)\n"

/* What symtrain train reads besides (symrun's and symtrain's --help). */
#define SYM_ENV_HELP_TRAIN                                                                   \
    " symtrain train:\n"                                                                     \
    "  SYMTRAIN_DATA_DIR        the Fashion-MNIST files, without --data-dir (default:\n"      \
    "                           where the Debian package puts them)\n"                       \
    "  SYMTRAIN_METRICS_PORT    --metrics-port's default: each PE serves Prometheus\n"       \
    "                           metrics on it plus its rank on the host (0: free ports)\n"

#endif
