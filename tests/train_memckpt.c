/*
 * train_memckpt — in-memory snapshots on buddy PEs (--mem-ckpt-every, held by
 * symrun across restarts) and issue 18's fault injection. 4 PEs train an
 * AdamW MLP for 20 steps with sharded checkpoints every 5 steps and memory
 * snapshots every 3, under `symrun --max-restarts 1 ... --resume=auto`:
 *   (a) PE 1 dies after step 12 and PE 2's region of the store is lost on the
 *       restart (SYMTRAIN_TEST_MEM_LOST=2, as a host's loss would): the run
 *       resumes from the snapshot of step 10, PE 2's shard from its buddy PE
 *       3's copy, the others' from their own, and says so;
 *   (b) the same with PEs 2 and 3 lost: both copies of PE 2's shard are gone,
 *       the log names it, and the disk's newest checkpoint is read instead;
 *   (c) 20 trials, seeded (the seed printed; SYMTRAIN_TEST_SEED replays
 *       them): a random PE SIGKILLed at a random time, by this test at a
 *       random point of the training (after 1-14 steps, so that the run is
 *       still there), or by the hooks halfway through its own
 *       snapshot, halfway through the copy into its buddy's region, or once its
 *       shard of a checkpoint is written but not committed;
 *   (d) --mem-ckpt-every without --ckpt-dir, or outside symrun (no store):
 *       each said once;
 *   (e) --zero 1 (each PE's optimizer state is its own blocks): PE 1 dies
 *       after step 13, the restart takes the snapshot of step 12, every PE its
 *       blocks from its own copy and the parameters from every part;
 *   (f) a GPT (gpt:L=2,C=32,H=2,V=128,T=16, 20 steps) in the 4-PE layouts
 *       dp=2,tp=2; dp=2,pp=2; tp=2,pp=2 (dp=1: a shard is its PE's whole
 *       part) and dp=2,pp=2 with --zero 2 over small buckets: a PE's shard is
 *       its 1/dp of its own part, read back by its dp team. A PE is killed
 *       after a snapshot; in dp=2,tp=2 PE 2's region is lost too (its shard
 *       from PE 3's copy, another part's PE), in tp=2,pp=2 PE 3's (from PE
 *       0's, the buddy across the wrap); every run's restart says it restored
 *       the snapshot from memory, and from which copies. Then dp=2,pp=2 with
 *       PEs 1 and 2's regions lost: both copies of PE 1's shard are gone, the
 *       log names it, and the disk's newest checkpoint is read instead;
 *   (g) a restart in another layout: --parallel auto keeps its layout in
 *       --ckpt-dir (parallel-auto), and the test rewrites it from dp=4,zero=1
 *       to dp=2,tp=2,zero=1 before the kill, and (a GPT of 4 blocks) from
 *       dp=2,pp=2 to the same mesh at 2 virtual stages. The snapshot's shards
 *       say their layout, so the restart says it is another and reads the disk
 *       (resharding): the run ends within fp32 rounding of the uninterrupted
 *       one in the first layout (tp sums in another order).
 * Trials 4-7 and 12-15 of (c) run under symrun --spare (each kind of death
 * twice): the restart takes over the spare PEs, started up beforehand, says
 * so, and ends as the others do.
 * Every run but (g) ends with the uninterrupted run's tensors (each compared
 * element by element) and every loss (replays included) bit for bit; a
 * half-written snapshot is never the one restored; afterwards nothing is left
 * in /dev/shm, in the PEs' $TMPDIR or as staging directories, and no process
 * holds any of the stores.
 */
#include "train_dckpt.h"

#define STEPS 20
#define MLP "--generated --train-samples 400 --test-samples 100 --epochs 2 " \
            "--model mlp:784-32-16-10 --batch 40 --optimizer adamw --lr 0.01 --threads 1 --quiet " \
            "--ckpt-format sharded --ckpt-steps 5 --resume=auto"
#define GPT "--generated --model gpt:L=2,C=32,H=2,V=128,T=16 --batch 8 --steps 20 --lr 0.01 " \
            "--warmup-steps 2 --threads 1 --quiet --device cpu --ckpt-format sharded " \
            "--ckpt-steps 5 --resume=auto"
#define GPT4 "--generated --model gpt:L=4,C=32,H=2,V=128,T=16 --batch 8 --steps 20 --lr 0.01 " \
             "--warmup-steps 2 --threads 1 --quiet --device cpu --ckpt-format sharded " \
             "--ckpt-steps 5 --resume=auto"
#define PLAIN "--generated --train-samples 400 --test-samples 100 --model mlp:784-32-16-10 " \
              "--batch 40 --threads 1 --quiet --max-steps 2 --mem-ckpt-every 1"
#define TRIALS 20

static const int mem_steps[] = {3, 5, 6, 9, 10, 12, 15, 18}; /* snapshots: every 3, and at 5, 10, 15 */
static pid_t symruns[TRIALS + 16];
static const char *base = MLP;  /* run_one's model and options: the MLP, or (f)'s GPT */
static const char *extra = "";  /* more options for run_one: --zero 1 in (e), (f)'s layouts */
static const char *ref = "ref"; /* the uninterrupted run with them */
static const char *launch = "--max-restarts 1"; /* run_one's symrun options */
static int nsymruns;

/* A /proc file whole (their size reads as 0, so e2e_read cannot), or NULL. */
static char *read_proc(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    CHECK(buf != NULL, "out of memory");
    for (;;) {
        if (len + 1 == cap) {
            buf = realloc(buf, cap *= 2);
            CHECK(buf != NULL, "out of memory");
        }
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = 0;
    return buf;
}

/* Files in a directory ("." and ".." aside); names containing `part` only when not NULL. */
static int dir_entries(const char *dir, const char *part) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && (!part || strstr(e->d_name, part)))
            n++;
    closedir(d);
    return n;
}

/* Processes holding (open or mapped) the store of any symrun this test started. */
static int store_holders(int say) {
    char names[TRIALS + 16][64];
    for (int i = 0; i < nsymruns; i++)
        snprintf(names[i], sizeof names[i], "memfd:symrun-snapshots.%d ", (int)symruns[i]);
    DIR *proc = opendir("/proc");
    CHECK(proc != NULL, "opendir /proc");
    struct dirent *e;
    int held = 0;
    while ((e = readdir(proc))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/%s/maps", e->d_name);
        char *maps = read_proc(path);
        snprintf(path, sizeof path, "/proc/%s/fd", e->d_name);
        DIR *fds = opendir(path);
        struct dirent *f;
        char links[8192] = "";
        size_t used = 0;
        while (fds && (f = readdir(fds))) {
            char l[600], t[256];
            snprintf(l, sizeof l, "%s/%s", path, f->d_name);
            ssize_t n = readlink(l, t, sizeof t - 2);
            if (n <= 0 || used + (size_t)n + 2 > sizeof links) continue;
            t[n] = ' ';
            memcpy(links + used, t, (size_t)n + 1);
            used += (size_t)n + 1;
            links[used] = 0;
        }
        if (fds) closedir(fds);
        for (int i = 0; i < nsymruns; i++)
            if ((maps && strstr(maps, names[i])) || strstr(links, names[i])) {
                if (say) fprintf(stderr, "process %s holds %s\n", e->d_name, names[i]);
                held++;
            }
        free(maps);
    }
    closedir(proc);
    return held;
}

/* The PIDs of symrun's children: its PEs, or with `spares` its --spare ones. */
static int pes_of(pid_t parent, pid_t *out, int max, int spares) {
    DIR *proc = opendir("/proc");
    CHECK(proc != NULL, "opendir /proc");
    struct dirent *e;
    int n = 0;
    while ((e = readdir(proc)) && n < max) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        char *st = read_proc(path), *paren = st ? strrchr(st, ')') : NULL;
        int ppid = 0;
        if (paren && sscanf(paren + 2, "%*c %d", &ppid) == 1 && ppid == parent) {
            snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            char env[65536];
            ssize_t len = fd >= 0 ? read(fd, env, sizeof env) : -1;
            if (fd >= 0) close(fd);
            int spare = 0;
            for (ssize_t i = 0; i < len; i += (ssize_t)strnlen(env + i, (size_t)(len - i)) + 1)
                spare |= !strncmp(env + i, "SYMTRAIN_SPARE_FD=", 18);
            if (len > 0 && spare == spares) out[n++] = (pid_t)atoi(e->d_name);
        }
        free(st);
    }
    closedir(proc);
    return n;
}

/* --parallel auto's kept layout in the work directory's checkpoint directory `dir`
 * (written beside, then renamed over). */
static void keep_layout(const char *dir, const char *layout) {
    const char *tmp = e2e_path("parallel-auto.tmp");
    FILE *f = fopen(tmp, "w");
    CHECK(f != NULL, "open %s", tmp);
    fprintf(f, "%s\n", layout);
    CHECK(fclose(f) == 0, "write %s", tmp);
    CHECK(rename(tmp, e2e_path("%s/parallel-auto", dir)) == 0, "rename %s", tmp);
}

/* Step records in a metrics file. */
static int steps_done(const char *metrics) { return e2e_lines(metrics) - e2e_count(metrics, "\"eval\""); }

typedef struct {
    int memory, disk, scratch; /* where the restarts resumed from */
} tally_t;

/* One run under symrun --max-restarts 1: `env` (a hook, or NULL) kills a PE,
 * or with kill_after > 0 this test SIGKILLs a random PE once that many steps
 * are done (and a random 0-20 ms more). The run ends as the reference did;
 * returns the step the restart resumed from memory (-1: the disk, -2: the
 * beginning), or MISSED when the run had ended before the test's kill. */
#define MISSED (-3)
static long long run_one(const char *name, const char *env, int kill_after, test_rng_t *rng,
                         tally_t *t) {
    char line[2048];
    const char *ck = e2e_path("%s", name), *metrics = e2e_path("%s.jsonl", name);
    const char *log = e2e_path("%s.log", name);
    snprintf(line, sizeof line, "%s --mem-ckpt-every 3 --ckpt-dir %s --metrics %s%s", base, ck,
             metrics, extra);
    e2e_proc_t p = e2e_start(4, launch, env, log, line);
    symruns[nsymruns++] = p.pid;
    if (kill_after > 0) {
        for (int ms = 0; steps_done(metrics) < kill_after && ms < 60000; ms += 2) e2e_sleep_ms(2);
        e2e_sleep_ms((int)(test_uniform(rng) * 20));
        pid_t pes[8];
        int n = pes_of(p.pid, pes, 8, 0);
        if (n < 4) { /* they are ending: the run outran the kill (a loaded machine) */
            int rc = e2e_wait(&p);
            if (rc != 0 || steps_done(metrics) != STEPS || e2e_log_has(log, "restarting"))
                e2e_show(log);
            CHECK(rc == 0 && steps_done(metrics) == STEPS && !e2e_log_has(log, "restarting"),
                  "%s: %d PEs running after %d steps, and the run did not end whole (exit "
                  "status %d, %d steps)", name, n, kill_after, rc, steps_done(metrics));
            return MISSED;
        }
        kill(pes[test_next(rng) % 4], SIGKILL);
    }
    int rc = e2e_wait(&p);
    if (rc != 0) e2e_show(log);
    CHECK(rc == 0, "%s: exit status %d", name, rc);
    e2e_expect_log(log, "was killed by signal 9");
    e2e_expect_log(log, "the job succeeded after 1 restart");
    if (strstr(launch, "--spare")) {
        e2e_expect_log(log, "take over");
        e2e_expect_log(log, "was done before it was needed; it waited");
    }
    dckpt_compare(e2e_path("%s/step-00000020", ref), e2e_path("%s/step-00000020", name), NULL);
    e2e_same_losses(e2e_path("%s.jsonl", ref), metrics, STEPS, 0);
    CHECK(dckpt_staging(ck) == 0, "%s: a staging directory is left in %s", name, ck);
    CHECK(dir_entries(getenv("TMPDIR"), NULL) == 0, "%s: files left in TMPDIR %s", name,
          getenv("TMPDIR"));
    char *text = e2e_read(log, NULL), *at = strstr(text, "in-memory snapshot of step ");
    long long from = at ? atoll(at + 27) : strstr(text, "resumed from ") ? -1 : -2;
    CHECK(from != -2 || strstr(text, "starting from the beginning"), "%s: the restart did not "
          "say where it resumed", name);
    free(text);
    if (from >= 0) t->memory++;
    else if (from == -1) t->disk++;
    else t->scratch++;
    return from;
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_memckpt");
    uint64_t seed = test_seed();
    printf("train_memckpt: seed %llu (SYMTRAIN_TEST_SEED=%llu replays it)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    test_rng_t rng = test_rng(seed, 0);
    const char *tmp = e2e_path("tmp"); /* the PEs' TMPDIR: it must stay empty */
    CHECK(mkdir(tmp, 0700) == 0, "mkdir %s", tmp);
    setenv("TMPDIR", tmp, 1);
    int shm_before = dir_entries("/dev/shm", "sym");
    /* The check of the end sees a store while it lives: symrun -n 1 sleep holds
     * one and hands it to its PE. */
    pid_t s = fork();
    CHECK(s >= 0, "fork");
    if (s == 0) {
        execl(e2e_symrun, e2e_symrun, "-n", "1", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    symruns[nsymruns++] = s;
    int live = 0;
    for (int ms = 0; ms < 10000 && (live = store_holders(0)) < 2; ms += 20) e2e_sleep_ms(20);
    CHECK(live >= 2, "%d processes hold the store of a live symrun -n 1 sleep, not 2", live);
    kill(s, SIGTERM); /* its PE gets it too, and symrun waits for it */
    CHECK(waitpid(s, NULL, 0) == s, "waitpid");
    char line[2048];
    snprintf(line, sizeof line, MLP " --ckpt-dir %s --metrics %s", e2e_path("ref"),
             e2e_path("ref.jsonl"));
    e2e_run(4, NULL, NULL, e2e_path("ref.log"), 0, line);
    tally_t t = {0};

    /* (a) PE 2's region lost: its shard from PE 3's copy */
    const char *log = e2e_path("lost1.log");
    CHECK(run_one("lost1", "SYMTRAIN_TEST_KILL_AT=1:12 SYMTRAIN_TEST_MEM_LOST=2", 0, &rng, &t) == 10,
          "with PE 2's region lost the restart did not take the snapshot of step 10");
    e2e_expect_log(log, "in-memory snapshot of step 10 restored");
    e2e_expect_log(log, "PE 1's own copy, PE 2's from its buddy PE 3's copy, PE 3's own copy");
    e2e_expect_log(log, "resumed from the in-memory snapshot: step 10");
    printf("train_memckpt: PE 2's region lost: its shard from PE 3's copy, bit-identical\n");

    /* (b) PE 2's and PE 3's regions lost: both copies of PE 2's shard gone */
    log = e2e_path("lost2.log");
    CHECK(run_one("lost2", "SYMTRAIN_TEST_KILL_AT=1:12 SYMTRAIN_TEST_MEM_LOST=2,3", 0, &rng, &t) == -1,
          "with both copies of PE 2's shard lost the restart did not read the disk");
    e2e_expect_log(log, "of PE 2's shard of step 10 (its own and PE 3's)");
    e2e_expect_log(log, "both are gone or half-written; reading --ckpt-dir instead");
    e2e_expect_log(log, "lost2/step-000000"); /* 10, or 5 when 10's commit had not happened */
    printf("train_memckpt: both copies of a shard lost: named, the disk's checkpoint used, "
           "bit-identical\n");

    /* (d) what it needs, said once: --ckpt-dir, symrun's store */
    const char *one = e2e_path("one.log");
    CHECK(e2e_sh(one, "'%s' -n 2 '%s' train " PLAIN, e2e_symrun, e2e_symtrain) == 2,
          "--mem-ckpt-every without --ckpt-dir is not a usage error (exit 2)");
    e2e_expect_log(one, "--mem-ckpt-every needs --ckpt-dir DIR");
    CHECK(e2e_sh(one, "'%s' train " PLAIN " --ckpt-dir '%s'", e2e_symtrain, e2e_path("alone")) == 0,
          "--mem-ckpt-every without symrun failed");
    e2e_expect_log(one, "--mem-ckpt-every: no in-memory snapshot store: symrun holds it");
    e2e_expect_log(one, "checkpoints go to the disk alone");
    printf("train_memckpt: without --ckpt-dir, without symrun: each said\n");

    /* (e) ZeRO-1: each PE's optimizer blocks from its own copy, the parameters from every part */
    extra = " --zero 1";
    ref = "zref";
    snprintf(line, sizeof line, MLP " --zero 1 --ckpt-dir %s --metrics %s", e2e_path("zref"),
             e2e_path("zref.jsonl"));
    e2e_run(4, NULL, NULL, e2e_path("zref.log"), 0, line);
    log = e2e_path("zero.log");
    CHECK(run_one("zero", "SYMTRAIN_TEST_KILL_AT=1:13", 0, &rng, &t) == 12,
          "with --zero 1 the restart did not take the snapshot of step 12");
    e2e_expect_log(log, "in-memory snapshot of step 12 restored");
    extra = "";
    ref = "ref";
    printf("train_memckpt: --zero 1, PE 1 killed after step 13: the snapshot of step 12 restored, "
           "bit-identical to the uninterrupted ZeRO run\n");

    /* (f) tp and pp: each PE's shard its 1/dp of its own part, read back by its dp team */
#define OWN4 "PE 0's own copy, PE 1's own copy, PE 2's own copy, PE 3's own copy"
    static const struct {
        const char *name, *opts, *env;
        long long step;   /* the snapshot the restart takes */
        const char *from; /* and what it says of the copies */
    } par[] = {
        {"dp2tp2", " --parallel dp=2,tp=2", "SYMTRAIN_TEST_KILL_AT=1:12 SYMTRAIN_TEST_MEM_LOST=2",
         10, "PE 0's own copy, PE 1's own copy, PE 2's from its buddy PE 3's copy, PE 3's own copy"},
        {"dp2pp2", " --parallel dp=2,pp=2", "SYMTRAIN_TEST_KILL_AT=3:13", 12, OWN4},
        {"tp2pp2", " --parallel tp=2,pp=2", "SYMTRAIN_TEST_KILL_AT=0:8 SYMTRAIN_TEST_MEM_LOST=3", 6,
         "PE 2's own copy, PE 3's from its buddy PE 0's copy"},
        {"dp2pp2z2", " --parallel dp=2,pp=2 --zero 2 --bucket-mb 0.01",
         "SYMTRAIN_TEST_KILL_AT=2:13", 12, OWN4},
    };
    tally_t tf = {0};
    base = GPT;
    for (size_t i = 0; i < sizeof par / sizeof *par; i++) {
        char name[32];
        snprintf(name, sizeof name, "%sref", par[i].name);
        snprintf(line, sizeof line, GPT "%s --ckpt-dir %s --metrics %s", par[i].opts,
                 e2e_path("%s", name), e2e_path("%s.jsonl", name));
        e2e_run(4, NULL, NULL, e2e_path("%s.log", name), 0, line);
        extra = par[i].opts;
        ref = name;
        log = e2e_path("%s.log", par[i].name);
        long long got = run_one(par[i].name, par[i].env, 0, &rng, &tf);
        if (got != par[i].step) e2e_show(log);
        CHECK(got == par[i].step, "%s: the restart took %lld, not the snapshot of step %lld",
              par[i].name, got, par[i].step);
        e2e_expect_log(log, par[i].from);
        e2e_expect_log(log, "resumed from the in-memory snapshot");
        printf("train_memckpt: %s%s, killed by %s: the snapshot of step %lld restored (%s), "
               "bit-identical\n", par[i].name, strstr(par[i].opts, "zero") ? " (ZeRO-2)" : "",
               par[i].env, got, par[i].from);
    }
    /* both copies of PE 1's shard (dp=2,pp=2: stage 1 of replica 0) lost */
    extra = par[1].opts;
    ref = "dp2pp2ref";
    log = e2e_path("pplost2.log");
    long long lost = run_one("pplost2", "SYMTRAIN_TEST_KILL_AT=3:13 SYMTRAIN_TEST_MEM_LOST=1,2", 0,
                             &rng, &tf);
    CHECK(lost == -1, "dp=2,pp=2 with both copies of PE 1's shard lost: the restart did not read "
          "the disk (%lld)", lost);
    e2e_expect_log(log, "of PE 1's shard of step 12 (its own and PE 2's)");
    e2e_expect_log(log, "both are gone or half-written; reading --ckpt-dir instead");
    e2e_expect_log(log, "pplost2/step-000000"); /* 10, or 5 */
    printf("train_memckpt: dp=2,pp=2 with both copies of PE 1's shard lost: named, the disk's "
           "checkpoint used, bit-identical\n");

    /* (g) the restart plans another layout: its snapshot is not this run's
     * parts (another mesh; the same mesh at other virtual stages) */
    static const struct {
        const char *name, *model, *ref, *first, *then, *said_first, *said_then, *layouts;
    } other[] = {
        {"auto", GPT, "--parallel dp=4 --zero 1", "dp=4,tp=1,pp=1,micro=1,zero=1",
         "dp=2,tp=2,pp=1,micro=1,zero=1", "dp=4,tp=1,pp=1, 1 micro-batch, ZeRO-1, kept",
         "dp=2,tp=2,pp=1, 1 micro-batch, ZeRO-1, kept", "dp=4,zero=1 and this run's is "
         "dp=2,tp=2,zero=1"},
        {"autov", GPT4, "--parallel dp=2,pp=2 --micro-batches 2", "dp=2,tp=1,pp=2,micro=2,zero=0",
         "dp=2,tp=1,pp=2,micro=2,zero=0,v=2", "dp=2,tp=1,pp=2, 2 micro-batches, ZeRO-0, kept",
         "dp=2,tp=1,pp=2, 2 micro-batches, ZeRO-0, 2 virtual stages, kept",
         "dp=2,pp=2 and this run's is dp=2,pp=2,v=2"},
    };
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        const char *nm = other[i].name;
        snprintf(line, sizeof line, "%s %s --ckpt-dir %s --metrics %s", other[i].model,
                 other[i].ref, e2e_path("%sref", nm), e2e_path("%sref.jsonl", nm));
        e2e_run(4, NULL, NULL, e2e_path("%sref.log", nm), 0, line);
        const char *ack = e2e_path("%s", nm), *ametrics = e2e_path("%s.jsonl", nm);
        CHECK(mkdir(ack, 0700) == 0, "mkdir %s", ack);
        keep_layout(nm, other[i].first);
        log = e2e_path("%s.log", nm);
        snprintf(line, sizeof line, "%s --parallel auto --mem-ckpt-every 3 --ckpt-dir %s "
                 "--metrics %s", other[i].model, ack, ametrics);
        e2e_proc_t p = e2e_start(4, "--max-restarts 1", "SYMTRAIN_TEST_KILL_AT=1:13", log, line);
        symruns[nsymruns++] = p.pid;
        for (int ms = 0; steps_done(ametrics) < 1 && ms < 60000; ms += 2) e2e_sleep_ms(2);
        keep_layout(nm, other[i].then); /* what the restart reads */
        int rc = e2e_wait(&p);
        if (rc != 0 || !e2e_log_has(log, other[i].layouts)) e2e_show(log);
        CHECK(rc == 0, "%s: exit status %d", nm, rc);
        char said[256];
        snprintf(said, sizeof said, "--parallel auto: %s", other[i].said_first);
        e2e_expect_log(log, said);
        snprintf(said, sizeof said, "--parallel auto: %s", other[i].said_then);
        e2e_expect_log(log, said);
        snprintf(said, sizeof said, "the in-memory snapshot of step 12 was taken in layout %s; "
                 "reading --ckpt-dir instead", other[i].layouts);
        e2e_expect_log(log, said);
        snprintf(said, sizeof said, "%s/step-000000", nm); /* 10, or 5 */
        e2e_expect_log(log, said);
        CHECK(!e2e_log_has(log, "restored in"), "%s: a snapshot of another layout was restored",
              nm);
        double diff;
        dckpt_compare(e2e_path("%sref/step-00000020", nm), e2e_path("%s/step-00000020", nm),
                      &diff);
        CHECK(diff < 1e-4, "%s: the run resumed in %s ends %g from the uninterrupted one", nm,
              other[i].then, diff);
        printf("train_memckpt: a restart in another layout (%s -> %s): the snapshot's layout "
               "named, the disk read, the end within %.1e of the uninterrupted run\n",
               other[i].first, other[i].then, diff);
    }
    base = MLP;
    extra = "";
    ref = "ref";

    /* (h) a spare PE killed before it is needed: said, none started again; the
     * restart after the next death starts new PEs and ends as the others */
    {
        const char *ck = e2e_path("nospare"), *metrics = e2e_path("nospare.jsonl");
        log = e2e_path("nospare.log");
        snprintf(line, sizeof line, "%s --mem-ckpt-every 3 --ckpt-dir %s --metrics %s", base, ck,
                 metrics);
        /* PE 2 dies at step 12 by the hook: no race with the run's end */
        e2e_proc_t p = e2e_start(4, "--max-restarts 1 --spare", "SYMTRAIN_TEST_KILL_AT=2:12", log,
                                 line);
        symruns[nsymruns++] = p.pid;
        pid_t pes[8];
        int n = 0;
        for (int ms = 0; ms < 60000 && (n = pes_of(p.pid, pes, 8, 1)) < 4; ms += 2) e2e_sleep_ms(2);
        CHECK(n == 4, "nospare: symrun --spare started %d spare PEs, not 4", n);
        kill(pes[1], SIGKILL);
        for (int ms = 0; steps_done(metrics) < 4 && ms < 60000; ms += 2) e2e_sleep_ms(2);
        CHECK(pes_of(p.pid, pes, 8, 1) == 0, "nospare: spare PEs are left after one was killed");
        int rc = e2e_wait(&p);
        if (rc != 0) e2e_show(log);
        CHECK(rc == 0, "nospare: exit status %d", rc);
        e2e_expect_log(log, "a spare PE ended before it was needed (PE 1 (pid ");
        e2e_expect_log(log, "was killed by signal 9 (Killed)); a restart starts new PEs");
        e2e_expect_log(log, "restarting the job (restart 1 of 1)\n");
        e2e_expect_log(log, "the job succeeded after 1 restart");
        dckpt_compare(e2e_path("ref/step-00000020"), e2e_path("nospare/step-00000020"), NULL);
        e2e_same_losses(e2e_path("ref.jsonl"), metrics, STEPS, 0);
        printf("train_memckpt: --spare, a spare PE killed before it was needed: said, the next "
               "restart with new PEs, bit-identical\n");
    }

    /* (c) the fault injection */
    int kinds[4] = {0};
    for (int i = 0; i < TRIALS; i++) {
        char name[32], env[128] = "";
        snprintf(name, sizeof name, "trial%02d", i);
        int kind = i % 4, pe = (int)(test_next(&rng) % 4), kill_after = 0;
        launch = (i / 4) % 2 ? "--max-restarts 1 --spare" : "--max-restarts 1";
        int step = mem_steps[test_next(&rng) % (sizeof mem_steps / sizeof *mem_steps)];
        if (kind == 0) {
            /* before the last 6 steps: the MLP's last 4 take some 20 ms, which the
             * random wait below could outlast on a loaded machine */
            kill_after = 1 + (int)(test_next(&rng) % (STEPS - 6));
        } else if (kind == 3) {
            step = 5 * (1 + (int)(test_next(&rng) % 3));
            snprintf(env, sizeof env, "SYMTRAIN_TEST_CKPT_EXIT_AT=%d:%d", pe, step);
        } else {
            snprintf(env, sizeof env, "SYMTRAIN_TEST_MEM_EXIT_AT=%d:%d:%s", pe, step,
                     kind == 1 ? "own" : "copy");
        }
        long long got;
        while ((got = run_one(name, kind ? env : NULL, kill_after, &rng, &t)) == MISSED) {
            printf("train_memckpt: %s: the run ended before the kill after %d steps; again, "
                   "killing after %d\n", name, kill_after, kill_after / 2 + 1);
            kill_after = kill_after / 2 + 1;
            strcat(name, "x");
        }
        kinds[kind]++;
        /* half of its own snapshot of `step` written: never the one restored */
        if (kind == 1)
            CHECK(got < step, "%s: PE %d died halfway through its snapshot of step %d, and the "
                  "restart took that snapshot (%lld)", name, pe, step, got);
        if (kind == 2)
            CHECK(got <= step, "%s: resumed from step %lld after a death at step %d", name, got,
                  step);
        char at[64];
        if (kind == 0) snprintf(at, sizeof at, "after %d steps", kill_after);
        else snprintf(at, sizeof at, "PE %d at step %d", pe, step);
        char src[48] = "the beginning (no snapshot yet)";
        if (got >= 0) snprintf(src, sizeof src, "memory, step %lld", got);
        if (got == -1) snprintf(src, sizeof src, "the disk (no whole snapshot)");
        printf("train_memckpt: %s%s: %s (%s): resumed from %s\n", name,
               strstr(launch, "--spare") ? " (--spare)" : "",
               kind == 0   ? "a PE SIGKILLed by the test"
               : kind == 3 ? "died between its checkpoint shard and the commit"
               : kind == 1 ? "died halfway through its own snapshot"
                           : "died halfway through the copy to its buddy",
               at, src);
        fflush(stdout);
    }
    CHECK(t.memory >= TRIALS / 2, "only %d of %d restarts resumed from memory", t.memory,
          TRIALS + 2);
    CHECK(dir_entries("/dev/shm", "sym") == shm_before, "files left in /dev/shm");
    CHECK(store_holders(1) == 0, "a store outlived its symrun");
    printf("train_memckpt: %d trials (%d killed by the test, %d mid-snapshot, %d mid-copy, %d "
           "mid-checkpoint): every one bit-identical; restarts from memory %d, the disk %d, the "
           "beginning %d; nothing left behind\n",
           TRIALS, kinds[0], kinds[1], kinds[2], kinds[3], t.memory, t.disk, t.scratch);
    e2e_cleanup();
    printf("train_memckpt: ok\n");
    return 0;
}
