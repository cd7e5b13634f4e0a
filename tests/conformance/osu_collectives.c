/*
 * osu_collectives — collective latency in the style of osu_oshm_barrier,
 * _broadcast, _collect, _fcollect and _reduce: pSync1 / pSync2 and pWrk1 /
 * pWrk2 alternating between iterations, shmem_barrier_all after each call,
 * message sizes doubling up to 256 KiB, a skip and a timed loop, the average
 * latency over the PEs (shmem_double_sum_to_all) printed by PE 0. With
 * -DUSE_TEAMS the same loops call the OpenSHMEM 1.5 team collectives. Every
 * size's last result is verified.
 *
 * @variants ; -DUSE_TEAMS
 * @npes 2 4
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define MAX_MSG_SIZE (1 << 18)
#define SKIP 5
#define ITERS 50
#define ITERS_LARGE 10

long pSync1[_SHMEM_BCAST_SYNC_SIZE], pSync2[_SHMEM_BCAST_SYNC_SIZE];
long pSyncRed1[_SHMEM_REDUCE_SYNC_SIZE], pSyncRed2[_SHMEM_REDUCE_SYNC_SIZE];
double pWrkD1[_SHMEM_REDUCE_MIN_WRKDATA_SIZE], pWrkD2[_SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double avg_time, max_time, latency;

static int errors;

static int64_t TIME(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static void report(int me, int npes, int size, int64_t t0, int64_t t1, int iters) {
    latency = (double)(t1 - t0) / iters;
    shmem_double_sum_to_all(&avg_time, &latency, 1, 0, 0, npes, pWrkD1, pSyncRed1);
    shmem_barrier_all();
    shmem_double_max_to_all(&max_time, &latency, 1, 0, 0, npes, pWrkD2, pSyncRed2);
    shmem_barrier_all();
    if (me == 0) printf("%-10d%18.2f%18.2f\n", size, avg_time / npes, max_time);
}

#define BAD(...)                                                                     \
    do {                                                                             \
        printf(__VA_ARGS__);                                                         \
        errors++;                                                                    \
    } while (0)

int main(void) {
    for (int i = 0; i < _SHMEM_BCAST_SYNC_SIZE; i++) pSync1[i] = pSync2[i] = _SHMEM_SYNC_VALUE;
    for (int i = 0; i < _SHMEM_REDUCE_SYNC_SIZE; i++)
        pSyncRed1[i] = pSyncRed2[i] = _SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    char *send = shmem_malloc(MAX_MSG_SIZE), *recv = shmem_malloc(MAX_MSG_SIZE * (size_t)npes);
    float *fsend = shmem_malloc(MAX_MSG_SIZE), *frecv = shmem_malloc(MAX_MSG_SIZE);
    float *pWrk1 = shmem_malloc((MAX_MSG_SIZE / 4 / 2 + _SHMEM_REDUCE_MIN_WRKDATA_SIZE) * 4);
    float *pWrk2 = shmem_malloc((MAX_MSG_SIZE / 4 / 2 + _SHMEM_REDUCE_MIN_WRKDATA_SIZE) * 4);
    int64_t t0 = 0, t1;

    /* barrier */
    shmem_barrier_all();
    for (int i = 0; i < ITERS + SKIP; i++) {
        if (i == SKIP) t0 = TIME();
#ifdef USE_TEAMS
        shmem_team_sync(SHMEM_TEAM_WORLD);
#else
        shmem_barrier(0, 0, npes, i % 2 ? pSync1 : pSync2);
#endif
    }
    t1 = TIME();
    if (me == 0) printf("# OSU OpenSHMEM Barrier Latency Test\n%-10s%18s%18s\n", "# Size",
                        "Avg Latency(us)", "Max Latency(us)");
    report(me, npes, 0, t0, t1, ITERS);

    for (int kind = 0; kind < 4; kind++) {
        static const char *names[] = {"Broadcast", "Collect", "FCollect", "Reduce"};
        if (me == 0) printf("# OSU OpenSHMEM %s Latency Test\n", names[kind]);
        for (int size = 4; size <= MAX_MSG_SIZE; size *= 4) {
            int iters = size > 8192 ? ITERS_LARGE : ITERS;
            int n32 = size / 4;
            for (int i = 0; i < n32; i++) {
                ((int *)send)[i] = me * 7 + i;
                fsend[i] = (float)(me + 1);
            }
            shmem_barrier_all();
            for (int i = 0; i < iters + SKIP; i++) {
                if (i == SKIP) t0 = TIME();
                long *ps = i % 2 ? pSync1 : pSync2;
                (void)ps; /* the team forms need no pSync */
                switch (kind) {
                case 0:
#ifdef USE_TEAMS
                    shmem_int_broadcast(SHMEM_TEAM_WORLD, (int *)recv, (int *)send, n32, 0);
#else
                    shmem_broadcast32(recv, send, n32, 0, 0, 0, npes, ps);
#endif
                    break;
                case 1:
#ifdef USE_TEAMS
                    shmem_collectmem(SHMEM_TEAM_WORLD, recv, send, size);
#else
                    shmem_collect32(recv, send, n32, 0, 0, npes, ps);
#endif
                    break;
                case 2:
#ifdef USE_TEAMS
                    shmem_fcollect(SHMEM_TEAM_WORLD, (int *)recv, (int *)send, n32);
#else
                    shmem_fcollect32(recv, send, n32, 0, 0, npes, ps);
#endif
                    break;
                case 3:
#ifdef USE_TEAMS
                    shmem_float_sum_reduce(SHMEM_TEAM_WORLD, frecv, fsend, n32);
#else
                    shmem_float_sum_to_all(frecv, fsend, n32, 0, 0, npes, i % 2 ? pWrk1 : pWrk2,
                                           i % 2 ? pSyncRed1 : pSyncRed2);
#endif
                    break;
                }
                shmem_barrier_all();
            }
            t1 = TIME();
            /* verify the last call */
            const int *r = (const int *)recv;
            if (kind == 0 && me != 0) {
                for (int i = 0; i < n32; i++)
                    if (r[i] != i) {
                        BAD("PE %d: broadcast of %d bytes wrong at %d\n", me, size, i);
                        break;
                    }
            } else if (kind == 1 || kind == 2) {
                for (int p = 0; p < npes; p++)
                    for (int i = 0; i < n32; i++)
                        if (r[p * n32 + i] != p * 7 + i) {
                            BAD("PE %d: %s of %d bytes wrong at %d/%d\n", me, names[kind], size,
                                p, i);
                            p = npes;
                            break;
                        }
            } else if (kind == 3) {
                float want = (float)npes * (npes + 1) / 2;
                for (int i = 0; i < n32; i++)
                    if (frecv[i] != want) {
                        BAD("PE %d: reduce of %d bytes: %g, want %g\n", me, size, frecv[i], want);
                        break;
                    }
            }
            report(me, npes, size, t0, t1, iters);
        }
    }
    static int all;
    shmem_int_atomic_add(&all, errors, 0);
    shmem_barrier_all();
    if (me == 0) printf("osu_collectives: %s\n", all ? "FAILED" : "PASS");
    shmem_free(pWrk2);
    shmem_free(pWrk1);
    shmem_free(frecv);
    shmem_free(fsend);
    shmem_free(recv);
    shmem_free(send);
    shmem_finalize();
    return errors ? EXIT_FAILURE : EXIT_SUCCESS;
}
