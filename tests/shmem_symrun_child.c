/*
 * shmem_symrun_child — the PEs that tests/shmem_symrun.sh and
 * tests/shmem_symrun_output.sh and tests/shmem_symrun_liveness.sh start under symrun,
 * one behaviour per mode. The "victim" is the last PE; the others wait in a
 * barrier that only symrun can end for them.
 *
 *   shmem_symrun_child MODE TOKEN
 *
 * TOKEN is ignored: it marks the processes, so the driver can tell whether
 * any outlived the job.
 */
#define _GNU_SOURCE
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static long never; /* nobody sets it */

static void block_forever(void) { shmem_long_wait_until(&never, SHMEM_CMP_NE, 0); }

/* A long explanation on stderr, one write per line as fprintf makes them, its
 * last line "END OF EXPLANATION from PE me". */
static void explain(int me) {
    for (int i = 0; i < 200; i++)
        fprintf(stderr, "PE %d: explanation line %3d: the input was wrong in this precise way\n",
                me, i);
    fprintf(stderr, "END OF EXPLANATION from PE %d\n", me);
}

/* Every symmetric memory file this PE maps (its own and its peers') is mode 0600. */
static int check_modes(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return perror("/proc/self/maps"), 1;
    char line[512];
    int seen = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "memfd:symtrain-")) continue;
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) != 2) continue;
        char path[128];
        snprintf(path, sizeof path, "/proc/self/map_files/%lx-%lx", lo, hi);
        struct stat st;
        if (stat(path, &st) < 0) {
            perror(path);
            bad++;
            continue;
        }
        seen++;
        if ((st.st_mode & 0777) != 0600) {
            fprintf(stderr, "FAIL: %s is mode %03o, not 0600:\n%s", path,
                    (unsigned)(st.st_mode & 0777), line);
            bad++;
        }
    }
    fclose(f);
    /* heap + data segment of every PE */
    if (seen < 2 * shmem_n_pes()) {
        fprintf(stderr, "FAIL: only %d symmetric memory mappings seen for %d PEs\n", seen,
                shmem_n_pes());
        bad++;
    }
    if (!bad) printf("PE %d: %d symmetric memory mappings, all mode 0600\n", shmem_my_pe(), seen);
    return bad != 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: shmem_symrun_child MODE [TOKEN]\n");
        return 2;
    }
    const char *mode = argv[1];
    const char *rank_env = getenv("SYMTRAIN_RANK"), *size_env = getenv("SYMTRAIN_SIZE");
    int victim_pre = rank_env && size_env && atoi(rank_env) == atoi(size_env) - 1;

    if (!strcmp(mode, "preinit_abort") && victim_pre) abort(); /* the others are in shmem_init */
    if (!strcmp(mode, "preinit_stop") && victim_pre) raise(SIGSTOP);
    if (!strcmp(mode, "ignore_term")) { /* as if busy saving a checkpoint */
        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
    }

    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), victim = me == n - 1;
    shmem_barrier_all();

    if (!strcmp(mode, "ok")) {
        printf("PE %d of %d: ok\n", me, n);
    } else if (!strcmp(mode, "abort")) {
        if (victim) abort();
        shmem_barrier_all();
    } else if (!strcmp(mode, "exit3")) {
        if (victim) exit(3);
        shmem_barrier_all();
    } else if (!strcmp(mode, "sigkill")) {
        if (victim) raise(SIGKILL);
        shmem_barrier_all();
    } else if (!strcmp(mode, "exit0_nofinalize")) {
        if (victim) _exit(0); /* skips the at-exit finalize */
        shmem_barrier_all();
    } else if (!strcmp(mode, "hang")) {
        if (victim)
            block_forever();
        else
            shmem_barrier_all();
    } else if (!strcmp(mode, "stop") || !strcmp(mode, "ignore_term")) {
        /* the victim stops (SIGSTOP, as a debugger or a stuck host would);
         * the others wait for it in a barrier */
        if (victim) raise(SIGSTOP);
        shmem_barrier_all();
    } else if (!strcmp(mode, "stop_once")) {
        const char *rc = getenv("SYMTRAIN_RESTART_COUNT");
        if (victim && (!rc || atoi(rc) == 0)) raise(SIGSTOP);
        shmem_barrier_all();
        printf("PE %d: ok after restart %s\n", me, rc ? rc : "?");
    } else if (!strcmp(mode, "preinit_stop")) {
        shmem_barrier_all(); /* the victim stopped before shmem_init */
    } else if (!strcmp(mode, "global_exit")) {
        if (victim) shmem_global_exit(5);
        shmem_barrier_all();
    } else if (!strcmp(mode, "tag")) {
        printf("line one from %d\n", me);
        fflush(stdout);
        fprintf(stderr, "err from %d\n", me);
        printf("line two from %d\nline three from %d\n", me, me);
        printf("partial from %d", me); /* no newline: symrun still tags and ends it */
        fflush(stdout);
    } else if (!strcmp(mode, "explain")) {
        /* the victim says why, then fails; the others wait in a barrier */
        if (victim) {
            explain(me);
            exit(1);
        }
        shmem_barrier_all();
    } else if (!strcmp(mode, "explain0")) {
        /* every PE sees the error; PE 0 alone explains it (as a program's
         * usage message is printed by PE 0), the others fail at once */
        if (me == 0) {
            usleep(20 * 1000); /* PE 0 is a little slower (a loaded machine) */
            explain(me);
        }
        exit(1);
    } else if (!strcmp(mode, "usage")) {
        /* a usage error: PE 0 prints the usage, every PE exits 2 */
        if (me == 0) fprintf(stderr, "usage: shmem_symrun_child MODE TOKEN\n");
        exit(2);
    } else if (!strcmp(mode, "restart")) {
        const char *rc = getenv("SYMTRAIN_RESTART_COUNT");
        if (victim && (!rc || atoi(rc) == 0)) exit(1);
        printf("PE %d: ok after restart %s\n", me, rc ? rc : "?");
    } else if (!strcmp(mode, "modes")) {
        shmem_barrier_all(); /* every PE has mapped every peer */
        if (check_modes()) return 1;
    } else if (!strcmp(mode, "linger")) {
        /* every PE finalizes; all but the victim then stay a while: the
         * victim's quick exit after shmem_finalize is not a failure */
        shmem_finalize();
        if (!victim) usleep(300 * 1000);
        return 0;
    } else if (!strcmp(mode, "preinit_abort")) {
        shmem_barrier_all(); /* never reached: the victim died before shmem_init */
    } else {
        fprintf(stderr, "shmem_symrun_child: unknown mode '%s'\n", mode);
        return 2;
    }
    shmem_finalize();
    return 0;
}
