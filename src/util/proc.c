/*
 * proc.c — processes that are ending, as /proc shows them (util.h).
 *
 * A process killed with gigabytes of memory takes a while to end: the kernel
 * frees its pages (a third of a second for 4 GiB of small pages) before it
 * closes its files and becomes a zombie its parent can reap. The task's
 * PF_EXITING flag is set and its exit code known before that, and from then
 * on none of its threads runs the program again. symrun uses this to see a
 * killed PE at once and to start a job's next attempt while the last one's
 * memory is still being returned; the next attempt's PEs wait, through
 * SYMTRAIN_DYING_PIDS, for what the old ones release only at their very end
 * (the checkpoint directory's lock, a GPU's memory).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define PF_EXITING 0x00000004u /* include/linux/sched.h */

/* The state, flags (field 9) and exit code (field 52) of /proc/.../stat; 0
 * when it cannot be read (the task is gone). */
static int read_stat(const char *path, char *state, unsigned long *flags, int *code) {
    char buf[1024];
    FILE *f = fopen(path, "re");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    if (!p) return 0;
    *state = p[2];
    *flags = 0;
    *code = 0;
    p += 2;
    for (int field = 3; *p && field <= 52; field++) { /* p is at field `field` */
        if (field == 9) *flags = strtoul(p, NULL, 10);
        if (field == 52) *code = (int)strtol(p, NULL, 10);
        p = strchr(p, ' ');
        if (!p) break;
        p++;
    }
    return 1;
}

int sym__proc_exiting(pid_t pid, int *code) {
    char path[64], state;
    unsigned long flags;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    return read_stat(path, &state, &flags, code) && (flags & PF_EXITING);
}

int sym__proc_all_exiting(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return 1; /* gone */
    int all = 1;
    struct dirent *e;
    while (all && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char t[400], state;
        unsigned long flags;
        int code;
        snprintf(t, sizeof t, "%s/%s/stat", path, e->d_name);
        if (read_stat(t, &state, &flags, &code) && state != 'Z' && state != 'X' &&
            !(flags & PF_EXITING))
            all = 0;
    }
    closedir(d);
    return all;
}

int sym__proc_dying(pid_t pid) {
    const char *s = getenv("SYMTRAIN_DYING_PIDS");
    for (const char *t = s; t && *t;) {
        char *end;
        long v = strtol(t, &end, 10);
        if (end == t) break;
        if (v == pid) return 1;
        t = *end == ',' ? end + 1 : end;
    }
    return 0;
}

/* Gone, or a zombie: it holds nothing any more. */
static int ended(pid_t pid) {
    char path[64], state;
    unsigned long flags;
    int code;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    return !read_stat(path, &state, &flags, &code) || state == 'Z' || state == 'X';
}

int sym__wait_dying(double max_s) {
    const char *s = getenv("SYMTRAIN_DYING_PIDS");
    double until = sym__now_s() + max_s;
    for (const char *t = s; t && *t;) {
        char *end;
        long v = strtol(t, &end, 10);
        if (end == t) break;
        while (!ended((pid_t)v)) {
            if (sym__now_s() > until) return -1;
            nanosleep(&(struct timespec){0, 2000000}, NULL);
        }
        t = *end == ',' ? end + 1 : end;
    }
    return 0;
}
