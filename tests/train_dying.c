/*
 * train_dying — an earlier attempt's PEs still ending (util/proc.c, symrun's
 * fast restart): a child holding 512 MiB that is SIGKILLed is seen exiting,
 * with the status waitpid then gives, and with no thread running, before it
 * is reaped; a running one is not. SYMTRAIN_DYING_PIDS is parsed, and
 * sym__wait_dying returns once the listed pids have ended (and -1 at its
 * limit while one lives). The checkpoint directory's lock held by a PE that
 * is listed there is waited for and taken once it ends; held by a live
 * process that is not listed, it is refused at once, naming the holder.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <symtrain/symtrain.h>

#include "test.h"
#include "util/util.h"

static void sleep_ms(int ms) { nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL); }

/* A child that touches `mb` MiB, takes the lock of dir when not NULL, says
 * so on the pipe, then sleeps until killed (or exits after `life_ms`). */
static pid_t child(size_t mb, const char *dir, int life_ms) {
    int p[2];
    if (pipe(p)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        char *m = mmap(NULL, mb << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        for (size_t i = 0; m != MAP_FAILED && i < mb << 20; i += 4096) m[i] = 1;
        int fd = -1;
        if (dir && sym_ckpt_lock(dir, &fd)) _exit(3);
        if (write(p[1], "x", 1) != 1) _exit(4);
        if (life_ms) {
            sleep_ms(life_ms);
            _exit(0);
        }
        for (;;) pause();
    }
    char x;
    close(p[1]);
    if (read(p[0], &x, 1) != 1) pid = -1;
    close(p[0]);
    return pid;
}

int main(void) {
    /* a killed child is seen ending before it is reaped */
    pid_t pid = child(512, NULL, 0);
    CHECK(pid > 0, "the child did not start");
    int code = -1;
    CHECK(!sym__proc_exiting(pid, &code), "a running child reads as exiting");
    CHECK(!sym__proc_all_exiting(pid), "a running child's threads read as stopped");
    kill(pid, SIGKILL);
    double until = sym__now_s() + 10;
    while (!sym__proc_exiting(pid, &code) && sym__now_s() < until) sleep_ms(1);
    CHECK(sym__proc_exiting(pid, &code) && WIFSIGNALED(code) && WTERMSIG(code) == SIGKILL,
          "a SIGKILLed child was not seen exiting on SIGKILL (status %d)", code);
    CHECK(sym__proc_all_exiting(pid), "a SIGKILLed child's threads read as running");
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && st == code, "waitpid gave %d, /proc %d", st, code);
    CHECK(sym__proc_all_exiting(pid), "a reaped child reads as running");

    /* the list, and waiting for it */
    pid_t a = child(1, NULL, 300);
    char list[64];
    snprintf(list, sizeof list, "12345678,%d", (int)a);
    setenv("SYMTRAIN_DYING_PIDS", list, 1);
    CHECK(sym__proc_dying(a) && sym__proc_dying(12345678) && !sym__proc_dying(getpid()),
          "SYMTRAIN_DYING_PIDS=%s read wrong", list);
    CHECK(sym__wait_dying(0.05) == -1, "sym__wait_dying returned while PE %d lives", (int)a);
    CHECK(sym__wait_dying(10) == 0, "sym__wait_dying did not see PE %d end", (int)a);
    waitpid(a, &st, 0);

    /* the checkpoint directory's lock */
    char dir[] = "/tmp/symtrain-dying.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    pid_t holder = child(1, dir, 400);
    int fd = -1;
    unsetenv("SYMTRAIN_DYING_PIDS");
    double t0 = sym__now_s();
    int rc = sym_ckpt_lock(dir, &fd);
    char want[64];
    snprintf(want, sizeof want, "pid %d", (int)holder);
    CHECK(rc == SYM_EBUSY && strstr(sym_last_error(), want) && sym__now_s() - t0 < 0.2,
          "a lock held by a live job: rc %d, \"%s\"", rc, sym_last_error());
    snprintf(list, sizeof list, "%d", (int)holder);
    setenv("SYMTRAIN_DYING_PIDS", list, 1);
    rc = sym_ckpt_lock(dir, &fd);
    CHECK(rc == SYM_OK && fd >= 0, "the lock of an ending PE was not taken once it ended: %s",
          sym_last_error());
    sym_ckpt_unlock(fd);
    waitpid(holder, &st, 0);
    /* begun at once, finished once it ended; a live holder is EBUSY at once */
    holder = child(1, dir, 400);
    int pending = 0;
    unsetenv("SYMTRAIN_DYING_PIDS");
    rc = sym_ckpt_lock_begin(dir, &fd, &pending);
    CHECK(rc == SYM_EBUSY && !pending && fd == -1, "begun on a live job's lock: rc %d", rc);
    snprintf(list, sizeof list, "%d", (int)holder);
    setenv("SYMTRAIN_DYING_PIDS", list, 1);
    t0 = sym__now_s();
    rc = sym_ckpt_lock_begin(dir, &fd, &pending);
    CHECK(rc == SYM_OK && pending && fd >= 0 && sym__now_s() - t0 < 0.2,
          "the lock of an ending PE was not left pending at once: rc %d, pending %d", rc, pending);
    CHECK(waitpid(holder, &st, WNOHANG) == 0, "the holder ended before the lock was begun");
    rc = sym_ckpt_lock_finish(dir, fd);
    CHECK(rc == SYM_OK, "the pending lock was not taken once its holder ended: %s",
          sym_last_error());
    char who[64], lock_path[96];
    snprintf(lock_path, sizeof lock_path, "%s/.lock", dir);
    FILE *lf = fopen(lock_path, "r");
    CHECK(lf && fgets(who, sizeof who, lf), "cannot read %s", lock_path);
    snprintf(want, sizeof want, "pid %d\n", (int)getpid());
    CHECK(strstr(who, want) != NULL, "the finished lock names \"%s\", not this process", who);
    fclose(lf);
    sym_ckpt_unlock(fd);
    waitpid(holder, &st, 0);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "%s", cmd);
    printf("train_dying: ok\n");
    return 0;
}
