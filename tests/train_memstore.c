/*
 * train_memstore — in-memory snapshots for jobs symrun does not start: the
 * host's `symtrain memstore SOCKET` holds the store across a restart that the
 * launcher (this test, as torchrun would) makes. 4 PEs start the torchrun way
 * (the env bootstrap: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) with
 * SYMTRAIN_MEMCKPT_SOCKET and train an AdamW MLP for 20 steps, sharded
 * checkpoints every 5 steps, memory snapshots every 3:
 *   (a) an uninterrupted job (the reference; it leaves its own snapshots in
 *       the holder's store);
 *   (b) the same job with PE 1 SIGKILLed after step 13: the launcher kills the
 *       others and starts all 4 again with TORCHELASTIC_RESTART_COUNT=1
 *       (torchrun's count, which the trainer takes for its own); the restart
 *       restores step 12 from memory, not the reference job's newer snapshots
 *       (a first attempt empties the store), and ends with the reference's
 *       losses and tensors, bit for bit;
 *   (c) the socket named but no holder there: the job says why and trains,
 *       checkpoints on the disk alone;
 *   (d) the holder: no socket named is a usage error; SIGTERM ends it with its
 *       socket removed.
 */
#include "train_dckpt.h"

#define NPES 4
#define STEPS 20
#define MLP "--generated --train-samples 400 --test-samples 100 --epochs 2 " \
            "--model mlp:784-32-16-10 --batch 40 --optimizer adamw --lr 0.01 --threads 1 " \
            "--quiet --ckpt-format sharded --ckpt-steps 5 --resume=auto --mem-ckpt-every 3"

/* One attempt of a job of NPES PEs started the torchrun way, each with `env`
 * (NAME=VALUE ...) and `symtrain train ARGS`, logs PREFIX.RANK.log. A PE that
 * dies makes the launcher kill the rest, as torchrun does. Returns the number
 * of PEs that did not exit 0. */
static int launch(const char *prefix, const char *env, const char *args) {
    pid_t pid[NPES];
    char port[16];
    static int nth; /* every attempt its own port */
    snprintf(port, sizeof port, "%d",
             20000 + (int)((getpid() * 7 + time(NULL) + 997 * nth++) % 20000));
    for (int r = 0; r < NPES; r++) {
        char line[4096];
        snprintf(line, sizeof line, "%s", args);
        char *argv[128];
        int n = 0;
        argv[n++] = (char *)e2e_symtrain;
        argv[n++] = "train";
        for (char *t = strtok(line, " "); t && n < 126; t = strtok(NULL, " ")) argv[n++] = t;
        argv[n] = NULL;
        const char *log = e2e_path("%s.%d.log", prefix, r);
        if ((pid[r] = e2e_fork_logged(log)) == 0) {
            e2e_env_rank(r, r, NPES, NPES, "127.0.0.1", port);
            for (char *t = env ? strtok(strdup(env), " ") : NULL; t; t = strtok(NULL, " "))
                putenv(t);
            if (e2e_nobody && test_become_nobody() < 0) _exit(77);
            execv(argv[0], argv);
            _exit(127);
        }
    }
    return e2e_wait_attempt(pid, NPES, 240, prefix);
}

/* The store's holder on `sock`, as this test's PEs run (nobody, if so). */
static pid_t start_holder(const char *sock, const char *log) {
    pid_t pid = e2e_fork_logged(log);
    if (pid == 0) {
        if (e2e_nobody && test_become_nobody() < 0) _exit(77);
        execl(e2e_symtrain, e2e_symtrain, "memstore", sock, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500 && access(sock, F_OK) != 0; i++) e2e_sleep_ms(10);
    CHECK(access(sock, F_OK) == 0, "symtrain memstore made no socket at %s", sock);
    /* the socket is bound before the holder says so: its line may come later */
    for (int i = 0; i < 500 && !e2e_log_has(log, "holding the in-memory snapshots"); i++)
        e2e_sleep_ms(10);
    return pid;
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_memstore");
    const char *sock = e2e_path("store.sock");
    pid_t holder = start_holder(sock, e2e_path("holder.log"));
    e2e_expect_log(e2e_path("holder.log"), "holding the in-memory snapshots");
    char env[1024], args[2048];

    /* (a) the reference */
    snprintf(env, sizeof env, "SYMTRAIN_MEMCKPT_SOCKET=%s", sock);
    snprintf(args, sizeof args, MLP " --max-steps %d --ckpt-dir %s --metrics %s", STEPS,
             e2e_path("ck_ref"), e2e_path("ref.jsonl"));
    CHECK(launch("ref", env, args) == 0, "the uninterrupted job failed (ref.*.log)");

    /* (b) PE 1 killed, the job started again by the launcher */
    snprintf(args, sizeof args, MLP " --max-steps %d --ckpt-dir %s --metrics %s", STEPS,
             e2e_path("ck_run"), e2e_path("run.jsonl"));
    snprintf(env, sizeof env, "SYMTRAIN_MEMCKPT_SOCKET=%s SYMTRAIN_TEST_KILL_AT=1:13", sock);
    CHECK(launch("first", env, args) > 0, "the first attempt ended without the kill");
    snprintf(env, sizeof env, "SYMTRAIN_MEMCKPT_SOCKET=%s SYMTRAIN_TEST_KILL_AT=1:13 "
             "TORCHELASTIC_RESTART_COUNT=1", sock);
    int failed = launch("again", env, args);
    if (failed) e2e_show(e2e_path("again.0.log"));
    CHECK(failed == 0, "the restarted attempt failed (again.*.log)");
    const char *log0 = e2e_path("again.0.log");
    e2e_expect_log(log0, "in-memory snapshot of step 12 restored");
    e2e_expect_log(log0, "resumed from the in-memory snapshot: step 12");
    e2e_same_losses(e2e_path("ref.jsonl"), e2e_path("run.jsonl"), STEPS, 0); /* step 13 may repeat */
    dckpt_compare(e2e_path("ck_ref/step-00000020"), e2e_path("ck_run/step-00000020"), NULL);
    printf("train_memstore: PE 1 killed after step 13, the job started again: step 12 restored from "
           "the holder's store, every loss and step 20's tensors identical to the "
           "uninterrupted job's\n");

    /* (c) no holder at the socket named */
    snprintf(env, sizeof env, "SYMTRAIN_MEMCKPT_SOCKET=%s", e2e_path("nobody-here.sock"));
    snprintf(args, sizeof args, MLP " --max-steps 6 --ckpt-dir %s", e2e_path("ck_none"));
    CHECK(launch("none", env, args) == 0, "the job without a holder failed (none.*.log)");
    e2e_expect_log(e2e_path("none.0.log"), "cannot reach the store holder at "
                                           "SYMTRAIN_MEMCKPT_SOCKET=");
    e2e_expect_log(e2e_path("none.0.log"), "checkpoints go to the disk alone");
    CHECK(e2e_newest(e2e_path("ck_none"), NULL, 0) == 6, "no step-6 checkpoint on the disk");
    printf("train_memstore: no holder at the socket: said, and the disk alone\n");

    /* (d) the holder's usage and end */
    CHECK(e2e_sh(e2e_path("usage.log"), "'%s' memstore", e2e_symtrain) == 2,
          "symtrain memstore without a socket did not exit 2");
    e2e_expect_log(e2e_path("usage.log"), "name the socket to listen on");
    CHECK(kill(holder, SIGTERM) == 0, "kill: %s", strerror(errno));
    int st;
    CHECK(waitpid(holder, &st, 0) == holder && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "symtrain memstore did not end with status 0 on SIGTERM");
    CHECK(access(sock, F_OK) != 0, "symtrain memstore left its socket %s", sock);
    printf("train_memstore: symtrain memstore: usage error 2; SIGTERM: exit 0, socket removed\n");
    e2e_cleanup();
    printf("train_memstore: ok\n");
    return 0;
}
