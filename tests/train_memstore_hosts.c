/*
 * train_memstore_hosts — in-memory snapshots across hosts: 2 hosts x 2 PEs
 * (other shapes at the end), each host a network namespace
 * (train_memstore_hosts.sh makes them and runs this with NETNS_TAG) with its
 * own `symtrain memstore` holder. The PEs start
 * the torchrun way (RANK, WORLD_SIZE, MASTER_ADDR = host 0), talk over
 * libfabric tcp between the namespaces, and train a small GPT (AdamW, 20
 * steps; sharded checkpoints every 5, memory snapshots every 3, so the
 * snapshots are of steps 3, 5, 6, 9, 10, 12, 15, 18). Each PE's copy goes to a
 * PE of the other host (PE 0 -> 2 -> 1 -> 3 -> 0), in pieces of 8 KiB
 * (SYMTRAIN_MEMCKPT_CHUNK) through the symmetric heap:
 *   (a) the uninterrupted job: the reference;
 *   (b) host 1 lost: PE 2 SIGKILLed after step 13, the launcher (this test,
 *       as torchrun would) kills the other PEs, and host 1's holder is
 *       SIGKILLed too, its store gone; a fresh holder on host 1, all 4 PEs
 *       started again (TORCHELASTIC_RESTART_COUNT=1): step 12 comes from
 *       memory, PEs 0 and 1 from their own, PEs 2 and 3 from their buddies on
 *       host 0, the log says so per shard; losses and step 20's tensors are the
 *       reference's, bit for bit;
 *   (c) one PE lost: PE 1 killed after step 13, both holders kept: every
 *       shard from its own memory, bit for bit;
 *   (d) host 1 lost and PE 1's region read as lost on the restart
 *       (SYMTRAIN_TEST_MEM_LOST=1): PE 1's shard has neither copy (its own
 *       was there, its copy on PE 3), nor PE 2's (its copy on PE 1); the log
 *       names PE 1's and both places, and the disk's newest whole
 *       checkpoint (step 10, or 5 if the background writer had not finished
 *       10) is read instead, bit for bit;
 *   (e) PE 2 killed halfway through its copy of step 12 to PE 1
 *       (SYMTRAIN_TEST_MEM_EXIT_AT=2:12:copy), host 1 lost: the half-written
 *       copy is refused (named), the previous snapshot (step 10) is whole and
 *       restored from memory, PEs 2 and 3 from host 0, bit for bit;
 *   (h) two failures a snapshot apart: host 1 lost after step 13, and in
 *       the restart (from step 12) host 0 lost after step 13 again, before
 *       the next snapshot (SYMTRAIN_TEST_KILL_AT=0:13:1): the first restore
 *       had written each shard back into its owner's fresh store and sent
 *       it to its buddy again, so the third attempt restores step 12 from
 *       memory too (PEs 0 and 1 from host 1), bit for bit;
 *   (g) ZeRO (--zero 1) and dp=2,tp=2, host 1 lost: step 12 from memory,
 *       PEs 2 and 3 from host 0, bit for bit with their uninterrupted runs;
 *   (f) uneven hosts, PE 0 on host 0 and PEs 1, 2 on host 1: the ring
 *       0 -> 1 -> 2 -> 0 keeps PE 1's copy on its own host, which the job
 *       warns of; host 0 lost: PE 0's shard from its buddy on host 1, bit for
 *       bit with an uninterrupted 3-PE job;
 *   (i) no holder on host 1: the job says why and keeps to the disk;
 *   (j) 3 hosts of 1 PE: PE 1's copy on host 2 (h + 1), host 1 lost: from
 *       there, bit for bit with an uninterrupted job on the same 3 hosts (the
 *       hierarchical sums follow the hosts, so not with (f)'s: the test
 *       tells them apart in the last bits).
 */
#include "train_dckpt.h"

#define HOSTS 3 /* namespaces made; the jobs use 2, (j) 3 */
#define MAXPES 4
#define STEPS 20
#define GPT "--generated --model gpt:L=2,C=32,H=2,V=128,T=16 --steps 20 --lr 0.01 " \
            "--optimizer adamw --warmup-steps 2 --threads 1 --quiet --device cpu "           \
            "--ckpt-format sharded --ckpt-steps 5 --resume=auto --mem-ckpt-every 3"
#define DEADLINE_S 240 /* an attempt running longer has hung: killed, failed */

static const char *tag; /* the namespaces: ${tag}h0, ${tag}h1 */
static const char *sock[HOSTS];
/* The job's shape: PE r on host host_of[r], index local_of[r] there. */
static int npes, host_of[MAXPES], local_of[MAXPES], host_pes[HOSTS];
static const char *batch;          /* "--batch 8" */
static const char *gpt_extra = ""; /* crash_and_restart's layout options */

/* PEs 0 .. n-1 on the hosts in rank order, per[h] of them on host h. */
static void shape(int n, const int *per) {
    npes = n;
    for (int h = 0, r = 0; h < HOSTS; h++) {
        host_pes[h] = 0;
        for (int i = 0; i < per[h] && r < n; i++, r++) {
            host_of[r] = h;
            local_of[r] = host_pes[h]++;
        }
    }
}

/* argv for `ip netns exec ${tag}hH PROGRAM ...` in v (its own copy of line). */
static void netns_argv(int h, char *line, char **v, int max) {
    static char ns[HOSTS][64];
    snprintf(ns[h], sizeof ns[h], "%sh%d", tag, h);
    int n = 0;
    v[n++] = "ip";
    v[n++] = "netns";
    v[n++] = "exec";
    v[n++] = ns[h];
    for (char *t = strtok(line, " "); t && n < max - 1; t = strtok(NULL, " ")) v[n++] = t;
    v[n] = NULL;
}

/* One attempt of the 4-PE job, each PE with `env` (NAME=VALUE ...) and
 * `symtrain train ARGS`, logs PREFIX.RANK.log. A PE that dies makes the
 * launcher kill the rest, as torchrun does. Returns the PEs that did not exit 0. */
static int launch(const char *prefix, const char *env, const char *args) {
    pid_t pid[MAXPES];
    char port[16];
    static int nth;
    snprintf(port, sizeof port, "%d",
             20000 + (int)((getpid() * 7 + time(NULL) + 997 * nth++) % 20000));
    for (int r = 0; r < npes; r++) {
        int h = host_of[r];
        char line[4096], *argv[160];
        snprintf(line, sizeof line, "%s train %s %s", e2e_symtrain, batch, args);
        netns_argv(h, line, argv, 160);
        const char *log = e2e_path("%s.%d.log", prefix, r);
        if ((pid[r] = e2e_fork_logged(log)) == 0) {
            char v[64];
            e2e_env_rank(r, local_of[r], npes, host_pes[h], "10.231.0.1", port);
            setenv("SYMTRAIN_OFI_PROVIDER", "tcp", 1);
            snprintf(v, sizeof v, "%sa%d", tag, h);
            setenv("FI_TCP_IFACE", v, 1);
            setenv("FI_NET_IFACE", v, 1);
            setenv("SYMTRAIN_MEMCKPT_SOCKET", sock[h], 1);
            setenv("SYMTRAIN_MEMCKPT_CHUNK", "8192", 1); /* a shard in several pieces */
            for (char *t = env ? strtok(strdup(env), " ") : NULL; t; t = strtok(NULL, " "))
                putenv(t);
            execvp(argv[0], argv);
            _exit(127);
        }
    }
    return e2e_wait_attempt(pid, npes, DEADLINE_S, prefix);
}

/* Host h's holder on `path`, inside its namespace. */
static pid_t start_holder(int h, const char *path) {
    char line[1024], *argv[16];
    snprintf(line, sizeof line, "%s memstore %s", e2e_symtrain, path);
    netns_argv(h, line, argv, 16);
    const char *log = e2e_path("holder%d.%d.log", h, (int)time(NULL) % 100000);
    pid_t pid = e2e_fork_logged(log);
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    for (int i = 0; i < 500 && access(path, F_OK) != 0; i++) e2e_sleep_ms(10);
    CHECK(access(path, F_OK) == 0, "symtrain memstore made no socket at %s", path);
    return pid;
}

static void end_holder(pid_t pid, int sig) {
    int st;
    CHECK(kill(pid, sig) == 0, "kill: %s", strerror(errno));
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
}

/* Every PE's log from PREFIX shown, for a failure. */
static void show_all(const char *prefix) {
    for (int r = 0; r < npes; r++) e2e_show(e2e_path("%s.%d.log", prefix, r));
}

/* A job killed by `kill_env` (host `lose` too when >= 0: its holder and
 * store), then started again; checkpoints in ck_NAME, metrics NAME.jsonl,
 * logs NAME1.* and NAME2.*. */
static void crash_and_restart(const char *name, const char *kill_env, const char *again_env,
                              int lose, pid_t *holder) {
    char args[2048], env[1024], p1[64], p2[64];
    snprintf(args, sizeof args, GPT " %s --ckpt-dir %s --metrics %s", gpt_extra,
             e2e_path("ck_%s", name), e2e_path("%s.jsonl", name));
    snprintf(p1, sizeof p1, "%s1", name);
    snprintf(p2, sizeof p2, "%s2", name);
    CHECK(launch(p1, kill_env, args) > 0, "%s: the first attempt ended without the kill", name);
    if (lose >= 0) { /* the host is gone: its holder with its store */
        end_holder(holder[lose], SIGKILL);
        unlink(sock[lose]);
        holder[lose] = start_holder(lose, sock[lose]);
    }
    snprintf(env, sizeof env, "%s TORCHELASTIC_RESTART_COUNT=1", again_env);
    int failed = launch(p2, env, args);
    if (failed) show_all(p2);
    CHECK(failed == 0, "%s: the restarted attempt failed (%s.*.log)", name, p2);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_memstore_hosts");
    tag = getenv("NETNS_TAG");
    CHECK(tag && *tag, "run through train_memstore_hosts.sh, which makes the namespaces");
    pid_t holder[HOSTS];
    shape(4, (int[]){2, 2, 0});
    batch = "--batch 8";
    for (int h = 0; h < HOSTS; h++) {
        sock[h] = e2e_path("store%d.sock", h);
        holder[h] = start_holder(h, sock[h]);
    }
    char args[2048];

    /* (a) the reference */
    snprintf(args, sizeof args, GPT " --ckpt-dir %s --metrics %s", e2e_path("ck_ref"),
             e2e_path("ref.jsonl"));
    int failed = launch("ref", "", args);
    if (failed) show_all("ref");
    CHECK(failed == 0, "the uninterrupted job failed (ref.*.log)");

    /* (b) host 1 lost */
    crash_and_restart("host", "SYMTRAIN_TEST_KILL_AT=2:13", "SYMTRAIN_TEST_KILL_AT=2:13", 1,
                      holder);
    const char *log = e2e_path("host2.0.log");
    e2e_expect_log(log, "in-memory snapshot of step 12 restored");
    e2e_expect_log(log, "PE 0's own memory (host 0");
    e2e_expect_log(log, "PE 1's own memory (host 0");
    e2e_expect_log(log, "PE 2's from the buddy on host 0 (");
    e2e_expect_log(log, "(PE 1's copy)");
    e2e_expect_log(log, "PE 3's from the buddy on host 0 (");
    e2e_expect_log(log, "(PE 0's copy)");
    e2e_expect_log(log, "resumed from the in-memory snapshot: step 12");
    e2e_same_losses(e2e_path("ref.jsonl"), e2e_path("host.jsonl"), STEPS, 0);
    dckpt_compare(e2e_path("ck_ref/step-00000020"), e2e_path("ck_host/step-00000020"), NULL);
    printf("train_memstore_hosts: host 1 lost (PE 2 killed after step 13, its PEs and its holder "
           "gone): step 12 restored from memory, PEs 2 and 3 from their buddies on host 0, every "
           "loss and step 20's tensors identical to the uninterrupted job's\n");

    /* (c) one PE lost, both stores kept */
    crash_and_restart("pe", "SYMTRAIN_TEST_KILL_AT=1:13", "SYMTRAIN_TEST_KILL_AT=1:13", -1, holder);
    log = e2e_path("pe2.0.log");
    e2e_expect_log(log, "in-memory snapshot of step 12 restored");
    for (int q = 0; q < npes; q++) {
        char want[64];
        snprintf(want, sizeof want, "PE %d's own memory (host %d", q, host_of[q]);
        e2e_expect_log(log, want);
    }
    CHECK(!e2e_log_has(log, "from the buddy"), "(c): a shard came from a buddy (pe2.0.log)");
    e2e_same_losses(e2e_path("ref.jsonl"), e2e_path("pe.jsonl"), STEPS, 0);
    dckpt_compare(e2e_path("ck_ref/step-00000020"), e2e_path("ck_pe/step-00000020"), NULL);
    printf("train_memstore_hosts: PE 1 killed, the holders kept: step 12 from every PE's own "
           "memory, bit-identical\n");

    /* (d) host 1 lost and PE 1's region too: PE 1's and PE 2's shards have neither copy */
    crash_and_restart("both", "SYMTRAIN_TEST_KILL_AT=2:13",
                      "SYMTRAIN_TEST_KILL_AT=2:13 SYMTRAIN_TEST_MEM_LOST=1", 1, holder);
    log = e2e_path("both2.0.log");
    e2e_expect_log(log, "no whole copy of PE 1's shard of step 12 (its own on host 0 (");
    e2e_expect_log(log, "and PE 3's on host 1 (");
    e2e_expect_log(log, "reading --ckpt-dir instead");
    CHECK(!e2e_log_has(log, "in-memory snapshot of step"),
          "(d): restored from memory (both2.0.log)");
    long long disk = e2e_resumed_from(log); /* 10, or 5 if the writer had not finished 10 */
    CHECK(disk == 10 || disk == 5, "(d): resumed from the disk's step %lld, not 10 or 5", disk);
    e2e_same_losses(e2e_path("ref.jsonl"), e2e_path("both.jsonl"), STEPS, 1);
    dckpt_compare(e2e_path("ck_ref/step-00000020"), e2e_path("ck_both/step-00000020"), NULL);
    printf("train_memstore_hosts: both copies of PE 1's shard gone: said, the disk's step %lld "
           "read, bit-identical\n", disk);

    /* (e) PE 2 killed halfway through its copy to PE 1 of step 12, host 1 lost */
    crash_and_restart("midcopy", "SYMTRAIN_TEST_MEM_EXIT_AT=2:12:copy",
                      "SYMTRAIN_TEST_MEM_EXIT_AT=2:12:copy", 1, holder);
    log = e2e_path("midcopy2.0.log");
    e2e_expect_log(log, "in-memory snapshot of step 10 restored");
    e2e_expect_log(log, "PE 2's from the buddy on host 0 (");
    e2e_expect_log(log, "PE 3's from the buddy on host 0 (");
    e2e_expect_log(log, "lack a whole copy of PE 2's shard of step 12"); /* why not step 12 */
    e2e_same_losses(e2e_path("ref.jsonl"), e2e_path("midcopy.jsonl"), STEPS, 1);
    dckpt_compare(e2e_path("ck_ref/step-00000020"), e2e_path("ck_midcopy/step-00000020"), NULL);
    printf("train_memstore_hosts: PE 2 killed halfway through its copy of step 12, host 1 lost: "
           "the half-written copy refused, step 10 restored from memory, bit-identical\n");

    /* (h) two failures, one snapshot: host 1 lost after step 13, the restart
     * (step 12) loses host 0 after step 13 too, before the next snapshot */
    snprintf(args, sizeof args, GPT " --ckpt-dir %s --metrics %s", e2e_path("ck_twice"),
             e2e_path("twice.jsonl"));
    CHECK(launch("twice1", "SYMTRAIN_TEST_KILL_AT=2:13", args) > 0, "(h): no first kill");
    end_holder(holder[1], SIGKILL);
    unlink(sock[1]);
    holder[1] = start_holder(1, sock[1]);
    CHECK(launch("twice2", "SYMTRAIN_TEST_KILL_AT=0:13:1 TORCHELASTIC_RESTART_COUNT=1", args) > 0,
          "(h): no second kill");
    e2e_expect_log(e2e_path("twice2.0.log"), "in-memory snapshot of step 12 restored");
    end_holder(holder[0], SIGKILL);
    unlink(sock[0]);
    holder[0] = start_holder(0, sock[0]);
    failed = launch("twice3", "TORCHELASTIC_RESTART_COUNT=2", args);
    if (failed) show_all("twice3");
    CHECK(failed == 0, "(h): the third attempt failed (twice3.*.log)");
    log = e2e_path("twice3.0.log");
    e2e_expect_log(log, "in-memory snapshot of step 12 restored");
    e2e_expect_log(log, "PE 0's from the buddy on host 1 (");
    e2e_expect_log(log, "PE 1's from the buddy on host 1 (");
    e2e_expect_log(log, "PE 2's own memory (host 1");
    e2e_expect_log(log, "PE 3's own memory (host 1");
    e2e_same_losses(e2e_path("ref.jsonl"), e2e_path("twice.jsonl"), STEPS, 0);
    dckpt_compare(e2e_path("ck_ref/step-00000020"), e2e_path("ck_twice/step-00000020"), NULL);
    printf("train_memstore_hosts: host 1 lost, then host 0 before the next snapshot: the restore "
           "had copied every shard again, step 12 from memory twice, bit-identical\n");

    /* (g) other layouts, host 1 lost: ZeRO (a PE reads its own optimizer blocks and
     * every PE's parameters, those of host 1's PEs from their windows), dp=2,tp=2 */
    static const char *const lay[][2] = {{"zero", "--zero 1"}, {"tp", "--parallel dp=2,tp=2"}};
    for (size_t i = 0; i < sizeof lay / sizeof lay[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "ref_%s", lay[i][0]);
        snprintf(args, sizeof args, GPT " %s --ckpt-dir %s --metrics %s", lay[i][1],
                 e2e_path("ck_%s", name), e2e_path("%s.jsonl", name));
        failed = launch(name, "", args);
        if (failed) show_all(name);
        CHECK(failed == 0, "the uninterrupted %s job failed (%s.*.log)", lay[i][1], name);
        const char *extra = lay[i][1];
        char kill_env[64] = "SYMTRAIN_TEST_KILL_AT=3:13";
        snprintf(name, sizeof name, "lay_%s", lay[i][0]);
        gpt_extra = extra;
        crash_and_restart(name, kill_env, kill_env, 1, holder);
        gpt_extra = "";
        log = e2e_path("%s2.0.log", name);
        e2e_expect_log(log, "in-memory snapshot of step 12 restored");
        e2e_expect_log(log, "PE 2's from the buddy on host 0 (");
        e2e_expect_log(log, "PE 3's from the buddy on host 0 (");
        e2e_same_losses(e2e_path("ref_%s.jsonl", lay[i][0]), e2e_path("%s.jsonl", name), STEPS, 0);
        dckpt_compare(e2e_path("ck_ref_%s/step-00000020", lay[i][0]),
                      e2e_path("ck_%s/step-00000020", name), NULL);
        printf("train_memstore_hosts: %s, host 1 lost: step 12 from memory, bit-identical\n",
               extra);
    }

    /* (f) uneven hosts: PE 0 on host 0, PEs 1 and 2 on host 1 (the ring 0 -> 1 -> 2 -> 0:
     * PE 1's buddy on its own host); host 0 lost */
    shape(3, (int[]){1, 2, 0});
    batch = "--batch 6";
    snprintf(args, sizeof args, GPT " --ckpt-dir %s --metrics %s", e2e_path("ck_ref3"),
             e2e_path("ref3.jsonl"));
    failed = launch("ref3", "", args);
    if (failed) show_all("ref3");
    CHECK(failed == 0, "the uninterrupted 3-PE job failed (ref3.*.log)");
    e2e_expect_log(e2e_path("ref3.0.log"), "the hosts hold uneven numbers of PEs: 1 of the 3 PEs "
                                           "keeps its in-memory copy on its own host");
    crash_and_restart("uneven", "SYMTRAIN_TEST_KILL_AT=0:13", "SYMTRAIN_TEST_KILL_AT=0:13", 0,
                      holder);
    log = e2e_path("uneven2.0.log");
    e2e_expect_log(log, "in-memory snapshot of step 12 restored");
    e2e_expect_log(log, "PE 0's from the buddy on host 1 (");
    e2e_expect_log(log, "PE 1's own memory (host 1");
    e2e_expect_log(log, "PE 2's own memory (host 1");
    e2e_same_losses(e2e_path("ref3.jsonl"), e2e_path("uneven.jsonl"), STEPS, 0);
    dckpt_compare(e2e_path("ck_ref3/step-00000020"), e2e_path("ck_uneven/step-00000020"), NULL);
    printf("train_memstore_hosts: uneven hosts (1 + 2 PEs), said; host 0 lost: PE 0's shard from "
           "its buddy on host 1, bit-identical\n");

    /* (i) no holder on host 1: said, the disk alone */
    shape(4, (int[]){2, 2, 0});
    batch = "--batch 8";
    const char *kept = sock[1];
    sock[1] = e2e_path("nobody-here.sock");
    snprintf(args, sizeof args, GPT " --max-steps 6 --ckpt-dir %s", e2e_path("ck_none"));
    failed = launch("none", "", args);
    if (failed) show_all("none");
    CHECK(failed == 0, "(i): the job without a holder on host 1 failed (none.*.log)");
    sock[1] = kept;
    e2e_expect_log(e2e_path("none.2.log"), "cannot reach the store holder at "
                                           "SYMTRAIN_MEMCKPT_SOCKET=");
    e2e_expect_log(e2e_path("none.0.log"), "no in-memory snapshot store on PE 2's host");
    e2e_expect_log(e2e_path("none.0.log"), "checkpoints go to the disk alone");
    CHECK(e2e_newest(e2e_path("ck_none"), NULL, 0) == 6, "(i): no step-6 checkpoint on the disk");
    printf("train_memstore_hosts: no holder on host 1: said, and the disk alone\n");

    /* (j) 3 hosts of one PE each: the ring 0 -> 1 -> 2 -> 0, host 1 lost: PE 1's
     * shard from its buddy on host 2 */
    shape(3, (int[]){1, 1, 1});
    batch = "--batch 6";
    snprintf(args, sizeof args, GPT " --ckpt-dir %s --metrics %s", e2e_path("ck_ref_three"),
             e2e_path("ref_three.jsonl")); /* its own: the sums' order follows the hosts */
    failed = launch("ref_three", "", args);
    if (failed) show_all("ref_three");
    CHECK(failed == 0, "the uninterrupted 3-host job failed (ref_three.*.log)");
    crash_and_restart("three", "SYMTRAIN_TEST_KILL_AT=1:13", "SYMTRAIN_TEST_KILL_AT=1:13", 1,
                      holder);
    log = e2e_path("three2.0.log");
    e2e_expect_log(log, "in-memory snapshot of step 12 restored");
    e2e_expect_log(log, "PE 0's own memory (host 0");
    e2e_expect_log(log, "PE 1's from the buddy on host 2 (");
    e2e_expect_log(log, "(PE 2's copy)");
    e2e_expect_log(log, "PE 2's own memory (host 2");
    e2e_same_losses(e2e_path("ref_three.jsonl"), e2e_path("three.jsonl"), STEPS, 0);
    dckpt_compare(e2e_path("ck_ref_three/step-00000020"), e2e_path("ck_three/step-00000020"),
                  NULL);
    printf("train_memstore_hosts: 3 hosts x 1 PE, host 1 lost: PE 1's shard from its buddy on "
           "host 2, bit-identical\n");

    for (int h = 0; h < HOSTS; h++) end_holder(holder[h], SIGTERM);
    e2e_cleanup();
    printf("train_memstore_hosts: ok\n");
    return 0;
}
