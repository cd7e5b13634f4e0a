/*
 * init.cu — bringing up the GPU part on every PE: choose the GPU, check the
 * heap fits, start NVSHMEM through its unique-id interface with symshmem
 * carrying the id (so `symrun -n N prog` is a complete NVSHMEM job), allocate
 * and zero symtrain's working memory, and learn which peers NVLink reaches.
 * Also symmetric allocation, finalisation, and the backend table that
 * libsymgpu (api.c) loads.
 *
 * Every check that can fail on some PEs and not others is followed by the
 * front end's agreement step, so all PEs return the same error and none is
 * left waiting inside NVSHMEM's bootstrap for a PE that gave up.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvshmem.h>
#include <nvshmemx.h>
#include <shmem.h>

#include "backend.h"
#include "gpu.h"

struct sym_gpu_state sym__gpu;

#define DEFAULT_HEAP ((size_t)1 << 30)
#define DEFAULT_SCRATCH ((size_t)256 << 20) /* 2 MiB per block region */
#define MIN_REGION ((size_t)64 << 10)
#define NVSHMEM_SLACK ((size_t)64 << 20) /* NVSHMEM's own allocations in the heap */

/* setenv unless the user already chose */
static void env_default(const char *name, const char *value) {
    const char *s = getenv(name);
    if (!s || !*s) setenv(name, value, 1);
}

/* SYMTRAIN_GPU_ALGO (a bad value is fatal, as every setting's is). */
static shmemx_gpu_algo_t read_algo(void) {
    static const char *const names[] = {"auto", "oneshot", "twoshot", "ring", NULL};
    static const shmemx_gpu_algo_t algos[] = {SHMEMX_GPU_ALGO_AUTO, SHMEMX_GPU_ALGO_ONESHOT,
                                              SHMEMX_GPU_ALGO_TWOSHOT, SHMEMX_GPU_ALGO_RING};
    return algos[sym__env_choice("SYMTRAIN_GPU_ALGO", names, 0)];
}

/* ---- step 1: which GPU ---- */

static int choose_device(int *dev, char *reason, size_t len) {
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev == 0) {
        snprintf(reason, len, "no usable GPU: cudaGetDeviceCount: %s; run on a host with an "
                 "NVIDIA GPU and its driver (GPU tests report SKIP without one)",
                 ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        (void)cudaGetLastError();
        return SHMEMX_GPU_ENODEV;
    }
    int lrank = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    int lsize = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    long forced = sym__env_int("SYMTRAIN_GPU", -1, 0, INT_MAX);
    long share = sym__env_flag("SYMTRAIN_GPU_SHARE", 0);
    if (forced >= 0) {
        if (forced >= ndev) {
            snprintf(reason, len, "SYMTRAIN_GPU=%ld but this host shows %d GPU%s (0..%d); "
                     "check CUDA_VISIBLE_DEVICES", forced, ndev, ndev == 1 ? "" : "s", ndev - 1);
            return SHMEMX_GPU_ENODEV;
        }
        *dev = (int)forced;
        return 0;
    }
    if (lsize > ndev && !share) {
        snprintf(reason, len, "%d PEs on this host but %d GPU%s visible; start at most %d PE%s "
                 "per host, or set SYMTRAIN_GPU_SHARE=1 to let PEs share GPUs (time-sliced "
                 "unless CUDA MPS runs: for tests, not speed)",
                 lsize, ndev, ndev == 1 ? "" : "s", ndev, ndev == 1 ? "" : "s");
        return SHMEMX_GPU_ETOOFEW;
    }
    *dev = lrank % ndev;
    return 0;
}

/* ---- step 2: does the heap fit ---- */

static int check_heap(int dev, size_t need, char *reason, size_t len) {
    size_t free_b = 0, total_b = 0;
    cudaError_t ce = cudaMemGetInfo(&free_b, &total_b);
    if (ce != cudaSuccess) {
        snprintf(reason, len, "cudaMemGetInfo on GPU %d: %s", dev, cudaGetErrorString(ce));
        return SHMEMX_GPU_ECUDA;
    }
    int lsize = shmem_team_n_pes(SHMEM_TEAM_SHARED), ndev = 1;
    (void)cudaGetDeviceCount(&ndev);
    /* PEs that share this GPU each need their own heap */
    size_t sharers = sym__env_int("SYMTRAIN_GPU", -1, 0, INT_MAX) >= 0 ? (size_t)lsize
                                                           : (size_t)((lsize + ndev - 1) / ndev);
    if (sharers < 1) sharers = 1;
    if (need > free_b / sharers) {
        char a[32], h[32], f[32], t[32];
        snprintf(reason, len,
                 "GPU symmetric heap too large: each PE needs %s (SYMTRAIN_GPU_HEAP_SIZE "
                 "%s plus symtrain's working memory), %zu PE%s on GPU %d, which has %s free of "
                 "%s; lower SYMTRAIN_GPU_HEAP_SIZE or SYMTRAIN_GPU_SCRATCH",
                 sym__fmt_size(need, a, sizeof a),
                 sym__fmt_size(sym__gpu.heap, h, sizeof h),
                 sharers, sharers == 1 ? "" : "s", dev, sym__fmt_size(free_b, f, sizeof f),
                 sym__fmt_size(total_b, t, sizeof t));
        return SHMEMX_GPU_EHEAP;
    }
    return 0;
}

/* ---- step 3: NVSHMEM, bootstrapped through symshmem ---- */

struct uid_msg {
    int status;
    nvshmemx_uniqueid_t uid;
};

static int start_nvshmem(sym_gpu_agree_fn agree) {
    int me = shmem_my_pe(), npes = shmem_n_pes();
    struct uid_msg *box = (struct uid_msg *)shmem_malloc(sizeof(struct uid_msg));
    if (!box) {
        sym__warn("shmemx_gpu_init", "symmetric heap exhausted (asked %zu bytes for the NVSHMEM "
                  "id); raise SYMTRAIN_SYMMETRIC_SIZE", sizeof(struct uid_msg));
        return SHMEMX_ENOMEM;
    }
    if (me == 0) {
        struct uid_msg m;
        memset(&m, 0, sizeof m);
        m.uid = NVSHMEMX_UNIQUEID_INITIALIZER;
        m.status = nvshmemx_get_uniqueid(&m.uid);
        for (int p = 0; p < npes; p++) shmem_putmem(box, &m, sizeof m, p);
    }
    shmem_barrier_all();
    struct uid_msg m = *box;
    shmem_free(box);
    char reason[256] = "";
    if (m.status != 0)
        snprintf(reason, sizeof reason, "nvshmemx_get_uniqueid failed (status %d) on PE 0; "
                 "NVSHMEM_DEBUG=INFO says why", m.status);
    int st = agree(m.status != 0 ? SHMEMX_GPU_ENVSHMEM : 0, reason);
    if (st) return st;

    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    int rc = nvshmemx_set_attr_uniqueid_args(me, npes, &m.uid, &attr);
    if (rc != 0) {
        snprintf(reason, sizeof reason, "nvshmemx_set_attr_uniqueid_args failed (status %d)", rc);
        return agree(SHMEMX_GPU_ENVSHMEM, reason);
    }
    rc = agree(0, NULL);
    if (rc) return rc;
    /* nvshmemx_init_attr ends the process with NVSHMEM's own message on failure;
     * symrun then ends the other PEs. */
    nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    if (nvshmem_my_pe() != me || nvshmem_n_pes() != npes) {
        snprintf(reason, sizeof reason, "NVSHMEM numbered this PE %d of %d, symshmem %d of %d",
                 nvshmem_my_pe(), nvshmem_n_pes(), me, npes);
        return agree(SHMEMX_GPU_ENVSHMEM, reason);
    }
    return agree(0, NULL);
}

/* ---- step 4: working memory and peers ---- */

static int setup_memory(sym_gpu_agree_fn agree, size_t scratch) {
    struct sym_gpu_state *g = &sym__gpu;
    size_t total = scratch + 2 * LL_BYTES + SYM_GPU_MAXTEAMS * FLAG_AREA_BYTES;
    char reason[256] = "";
    g->base = (uint8_t *)nvshmem_malloc(total);
    cudaError_t ce = cudaSuccess;
    if (g->base) ce = cudaMemset(g->base, 0, total);
    size_t nclock = (size_t)SYM_GPU_MAXTEAMS * SYM_GPU_MAXB;
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&g->clocks, nclock * sizeof *g->clocks);
    /* Test hook, not a setting: SYMTRAIN_TEST_GPU_EPOCH_START=N starts every
     * block's epoch and step at N instead of 0 (the same N on every PE, for
     * every team), so a test crosses a counter boundary (2^32, where 32-bit
     * epochs wrapped) in a few collectives (tests/gpu.cmake). */
    g->epoch0 = (uint64_t)sym__env_int("SYMTRAIN_TEST_GPU_EPOCH_START", 0, 0, LONG_MAX);
    /* Test hook: SYMTRAIN_TEST_GPU_NO_P2P=1 treats every peer as out of reach
     * of loads and stores (team.cu), so the ring runs as it does between
     * hosts (NVSHMEM signals for every handshake, private sources staged) on
     * one host's GPUs. */
    g->no_p2p = (int)sym__env_flag("SYMTRAIN_TEST_GPU_NO_P2P", 0);
    struct sym_gpu_clock *start = (struct sym_gpu_clock *)malloc(nclock * sizeof *start);
    if (!start && ce == cudaSuccess) ce = cudaErrorMemoryAllocation;
    for (size_t i = 0; start && i < nclock; i++) start[i].epoch = start[i].step = g->epoch0;
    if (ce == cudaSuccess)
        ce = cudaMemcpy(g->clocks, start, nclock * sizeof *start, cudaMemcpyHostToDevice);
    free(start);
    if (ce == cudaSuccess) ce = cudaDeviceSynchronize();
    int st = 0;
    if (!g->base) {
        char sz[32];
        snprintf(reason, sizeof reason, "nvshmem_malloc of symtrain's working memory (%s) "
                 "failed; lower SYMTRAIN_GPU_SCRATCH or raise NVSHMEM_SYMMETRIC_SIZE",
                 sym__fmt_size(total, sz, sizeof sz));
        st = SHMEMX_GPU_EHEAP;
    } else if (ce != cudaSuccess) {
        snprintf(reason, sizeof reason, "preparing working memory: %s", cudaGetErrorString(ce));
        st = SHMEMX_GPU_ECUDA;
    }
    st = agree(st, reason);
    if (st) return st;
    g->off_ll = scratch;
    g->off_flags = scratch + 2 * LL_BYTES;
    g->region = (scratch / SYM_GPU_MAXB) & ~(size_t)255;
    /* NVLink (or same-GPU) reach between every pair of PEs: a team's NVLink
     * algorithms need all of its members' (team.cu) */
    st = sym__gpu_reach_init(agree);
    if (st) return st;
    /* every PE zeroed its flags before any kernel may write a peer's */
    shmem_barrier_all();
    return 0;
}

static int gpu_init(sym_gpu_agree_fn agree) {
    struct sym_gpu_state *g = &sym__gpu;
    if (g->ready) return 0;
    memset(g, 0, sizeof *g);
    g->me = shmem_my_pe();
    g->npes = shmem_n_pes();
    char reason[512] = "";
    int dev = -1;
    int st = agree(choose_device(&dev, reason, sizeof reason), reason);
    if (st) return st;
    SYM_GPU_CUDA("shmemx_gpu_init", cudaSetDevice(dev));
    g->dev = dev;

    g->heap = sym__env_size("SYMTRAIN_GPU_HEAP_SIZE", DEFAULT_HEAP);
    size_t scratch = sym__env_size("SYMTRAIN_GPU_SCRATCH", DEFAULT_SCRATCH);
    if (scratch < MIN_REGION * SYM_GPU_MAXB) scratch = MIN_REGION * SYM_GPU_MAXB;
    size_t ours = scratch + 2 * LL_BYTES + SYM_GPU_MAXTEAMS * FLAG_AREA_BYTES + NVSHMEM_SLACK;
    size_t symsize = g->heap + ours;
    symsize = sym__env_size("NVSHMEM_SYMMETRIC_SIZE", symsize); /* the user's, if set */
    st = agree(check_heap(dev, symsize, reason, sizeof reason), reason);
    if (st) return st;

    char buf[32];
    snprintf(buf, sizeof buf, "%zu", symsize);
    env_default("NVSHMEM_SYMMETRIC_SIZE", buf);
    env_default("NVSHMEM_DISABLE_NVLS", "1"); /* our kernels use no NVLink multicast */
    env_default("NVSHMEM_DISABLE_NCCL", "1"); /* nor NVSHMEM's collectives */
    if (shmem_team_n_pes(SHMEM_TEAM_SHARED) == g->npes) {
        /* one host: bootstrap over loopback, no network transport */
        env_default("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "lo");
        env_default("NVSHMEM_REMOTE_TRANSPORT", "none");
    }
    st = start_nvshmem(agree);
    if (st) return st;
    st = setup_memory(agree, scratch);
    if (st) return st;

    g->force_algo = read_algo();
    g->force_blocks = (int)sym__env_int("SYMTRAIN_GPU_BLOCKS", 0, 0, SYM_GPU_MAXB);
    g->oneshot_max = sym__env_size("SYMTRAIN_GPU_ONESHOT_MAX", 0);
    g->min_chunk = sym__env_size("SYMTRAIN_GPU_MIN_CHUNK", 0);
    g->pdl = sym__env_flag("SYMTRAIN_GPU_PDL", 1);
    g->timeout_ns =
        (unsigned long long)(sym__env_seconds("SYMTRAIN_GPU_TIMEOUT", 30) * 1e9);
    g->last_algo = SHMEMX_GPU_ALGO_AUTO;
    st = shmemx_team_destroy_callback_add(sym__gpu_team_destroyed, NULL); /* same on every PE */
    if (st) return st;
    g->ready = 1;
    return 0;
}

static int gpu_finalize(void) {
    struct sym_gpu_state *g = &sym__gpu;
    if (!g->ready) return 0;
    cudaError_t ce = cudaDeviceSynchronize();
    shmemx_team_destroy_callback_remove(sym__gpu_team_destroyed, NULL);
    sym__gpu_teams_fini();
    nvshmem_free(g->base);
    cudaFree(g->clocks);
    nvshmem_finalize();
    g->ready = 0;
    if (ce != cudaSuccess) {
        sym__warn("shmemx_gpu_finalize", "work still on the GPU failed: %s",
                  cudaGetErrorString(ce));
        return SHMEMX_GPU_ECUDA;
    }
    return 0;
}

static int gpu_device(void) { return sym__gpu.ready ? sym__gpu.dev : -1; }

/* ---- symmetric memory ---- */

static void *gpu_malloc(size_t bytes) {
    sym__gpu_cache_clear();
    void *p = nvshmem_malloc(bytes);
    if (!p && bytes) {
        char a[32], h[32];
        sym__warn("shmemx_gpu_malloc", "GPU symmetric heap exhausted: asked %s, the heap is %s; "
                  "raise SYMTRAIN_GPU_HEAP_SIZE", sym__fmt_size(bytes, a, sizeof a),
                  sym__fmt_size(sym__gpu.heap, h, sizeof h));
    }
    return p;
}

static void gpu_free(void *ptr) {
    sym__gpu_cache_clear();
    nvshmem_free(ptr);
}

static void *gpu_ptr(const void *ptr, int pe) { return nvshmem_ptr(ptr, pe); }

static void gpu_set_algo(shmemx_gpu_algo_t algo, int blocks) {
    sym__gpu.force_algo = (unsigned)algo < SHMEMX_GPU_ALGO_COUNT ? algo : SHMEMX_GPU_ALGO_AUTO;
    sym__gpu.force_blocks = blocks > 0 ? blocks : 0;
}

static shmemx_gpu_algo_t gpu_last_algo(void) { return sym__gpu.last_algo; }

/* ---- the table libsymgpu loads ---- */

static const struct sym_gpu_backend backend = {
    SYM_GPU_BACKEND_ABI,
    gpu_init,
    gpu_finalize,
    gpu_device,
    gpu_malloc,
    gpu_free,
    gpu_ptr,
    sym__gpu_allreduce,
    sym__gpu_reduce_scatter,
    sym__gpu_allgather,
    sym__gpu_broadcast,
    sym__gpu_alltoall,
    gpu_set_algo,
    gpu_last_algo,
};

extern "C" __attribute__((visibility("default"))) const struct sym_gpu_backend *
sym__gpu_backend(void) {
    return &backend;
}
