/*
 * symrun — start the PEs of a job on this machine and watch over them.
 *
 *   symrun -n N [--timeout SECONDS] [--hang-timeout SECONDS] [--tag-output]
 *          [--max-restarts K] [--] program [args]
 *
 * symrun forks N processes, each holding one end of a socket pair through which
 * it bootstraps (src/bootstrap/symrun.c): symrun answers all-gathers and
 * global-exit requests. It returns 0 only if every PE exits 0. When a PE fails
 * (non-zero exit, a signal, or an exit without shmem_finalize after shmem_init)
 * symrun ends the others within a second and says once which PE failed and how
 * (a usage error, exit status 2, plainly as one); with --max-restarts it then
 * starts the whole job again, up to K times.
 *
 * What the PEs write is never cut off by that: the other PEs first get
 * FAIL_GRACE_MS to end by themselves (they often saw the same error, and the
 * one explaining it may not be the first to exit), then SIGTERM, then SIGKILL;
 * except when a PE was killed by a signal, a restart follows and the PEs keep
 * in-memory snapshots in symrun's store: the others then wait for it in vain,
 * the restart needs no checkpoint still being written, so they are SIGKILLed
 * at once and the recovery does not wait for them. Nor for the kernel to
 * free their memory (a third of a second for every 4 GiB of small pages):
 * such a job's PEs are watched every FAST_POLL_MS for one that has begun to
 * exit on a signal (util/proc.c), and once every thread of the others has
 * stopped, the next attempt starts while their pages are still being freed,
 * when the machine has the memory for both (MemAvailable against the old
 * PEs' resident memory; else it waits as before). Its PEs learn the old
 * ones' pids (SYMTRAIN_DYING_PIDS) and wait for them only where they must:
 * for the checkpoint directory's lock and before using a GPU;
 * their output is forwarded all the while (--tag-output) and read to the end
 * of each pipe before symrun exits. symrun's own line comes after the grace.
 *
 * --spare (with --max-restarts): the next attempt's PEs are started while the
 * job runs (SPARE_DELAY_S after a restart, not beside its restore); their
 * output is held, and symtrain train waits, its start-up done, on the pipe
 * it has in SYMTRAIN_SPARE_FD. A restart takes them over: each is sent the
 * old PEs' pids ("pid,...\n") and goes on, so a recovery skips the process
 * start, shmem_init, the data, the model and its buffers. A spare that ends
 * before it is needed is said once, and no more are started. They cost the
 * PEs' memory a second time.
 *
 * Signals: the first SIGINT, SIGTERM or SIGHUP is passed to the PEs (training
 * saves a checkpoint and stops), unless it came from the terminal (Ctrl-C),
 * which sent it to the PEs as well: passing it on would be their second. A
 * second one kills them (SIGKILL) and symrun exits 128+N at once, so a PE that
 * cannot stop (stopped, wedged) never holds the job. PEs stopped that way
 * exit 0 (they saved a checkpoint) or 130 (nothing saved), and so does symrun.
 *
 * Liveness (--hang-timeout S): each PE bumps a counter in a memory file symrun
 * shares with it (src/bootstrap/wire.h) whenever it waits, enters a barrier or
 * a collective step (sym__beat, src/util/util.h). A PE whose counter stays
 * still for S seconds while it runs (a SIGSTOPped PE, one stuck in a loop or a
 * system call) ends the job, named, with status 124, as a timeout does; with
 * --max-restarts the job is then started again. A PE waiting for symrun (its
 * part of a bootstrap all-gather is in) counts as progressing, and one that has
 * not reported yet (before shmem_init) is only held to S while another PE
 * waits for it in the bootstrap or while it is stopped. After shmem_finalize
 * nothing is watched. A
 * job whose PEs all keep waiting for each other (a deadlock) keeps beating:
 * --timeout ends that.
 *
 * Symmetric memory lives in memory files owned by the PEs (src/transport/shm.c),
 * so nothing is left in /dev/shm however the PEs end.
 *
 * In-memory snapshots (symtrain train --mem-ckpt-every): symrun makes one
 * memory file before the first start and holds it until it exits, restarts
 * included; every PE of every attempt gets its number (SYMTRAIN_MEMCKPT_FD)
 * and keeps its snapshot and its buddy's copy there (src/train/ckpt/peer.c),
 * so a PE's death loses none of them. It has no name anywhere: symrun's end,
 * however it ends, frees it (the PEs die with symrun).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../src/bootstrap/wire.h"
#include "../src/util/util.h" /* sym__parse_int, sym__parse_seconds */
#include "envhelp.h"

#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124 /* --timeout, --hang-timeout */
#define MAX_PES 4096
#define MAX_RESTARTS 1000000
#define FAIL_GRACE_MS 500 /* after a PE fails, the others may end by themselves */
#define KILL_GRACE_MS 400 /* SIGTERM, then SIGKILL after this */
#define FAST_POLL_MS 5    /* how often a job with in-memory snapshots is looked at */
#define STOP_WAIT_S 5.0   /* for a SIGKILLed PE's threads to stop, before waiting for its end */
#define SPARE_DELAY_S 2.0 /* after a restart, before the next spares start */

typedef struct {
    int argc;
    char **argv; /* program and its arguments */
    int npes;
    double timeout; /* seconds; 0 = none */
    double hang_timeout; /* seconds a running PE may go without a heartbeat; 0 = unwatched */
    int tag_output;
    int max_restarts;
    int spare; /* --spare: the next attempt's PEs wait, started, for a failure */
} options_t;

typedef struct {
    pid_t pid;
    int sock;        /* our end of its bootstrap socket; -1 once closed */
    int out[2];      /* its stdout / stderr pipes with --tag-output; -1 once closed */
    char *line[2];   /* partial output lines */
    size_t line_len[2];
    int running;
    int status;      /* wait status once it ended */
    int initialized; /* took part in the bootstrap */
    int finalized;   /* told us shmem_finalize is done */
    char *gather;    /* its part of the pending all-gather */
    uint32_t gather_len;
    int gather_ready;
    int unreaped;    /* seen ending (its status read from /proc), reaped later or never */
    uint64_t beat;   /* its heartbeat counter when last seen to change */
    double beat_at;  /* when that was (or when it last talked to us) */
    int go_fd;       /* a spare's: the pipe that lets it go on (-1: none, or gone) */
    int hold;        /* a spare's output is kept until it takes over */
} pe_t;

static int sig_pipe[2] = {-1, -1};
static int tag_output; /* --tag-output */
static int store_fd = -1; /* the in-memory snapshot store, held across restarts */
static char dying[1024];  /* the last attempt's PEs still ending: "pid,pid,..." */
static volatile sig_atomic_t got_signal; /* the last of SIGINT, SIGTERM, SIGHUP */
static volatile sig_atomic_t signals;    /* how many of them arrived */
/* The last one came from the terminal (Ctrl-C, a hang-up): the kernel sent it
 * to the terminal's whole foreground process group, the PEs included. */
static volatile sig_atomic_t from_terminal;

static void note(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(buf, sizeof buf, "symrun: ");
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = strlen(buf);
    if (len < sizeof buf - 1) buf[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}

/* note() for what a signal started: on a new line when stderr is a terminal,
 * where a PE's progress bar (and the terminal's ^C) may end the current one. */
static void note_after_signal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_after_signal(const char *fmt, ...) {
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (isatty(STDERR_FILENO)) {
        ssize_t w = write(STDERR_FILENO, "\n", 1);
        (void)w;
    }
    note("%s", buf);
}

static void print_usage(FILE *f) {
    fprintf(f,
            "usage: symrun -n N [--timeout SECONDS] [--hang-timeout SECONDS] [--tag-output]\n"
            "              [--max-restarts K [--spare]] [--] program [args...]\n"
            "  -n, -np N          number of PEs to start (1 to %d)\n"
            "  --timeout S        end the job, failing, after S seconds\n"
            "  --hang-timeout S   end the job, naming the PE, when a running PE makes no\n"
            "                     progress (no wait, barrier or collective) for S seconds\n"
            "  --tag-output       prefix every output line with [PE n]\n"
            "  --max-restarts K   when a PE fails or hangs, start the job again, up to K\n"
            "                     times (0 to %d)\n"
            "  --spare            with --max-restarts: start the next attempt's PEs while\n"
            "                     the job runs; they start up, then wait, and a restart\n"
            "                     takes them over (symtrain train; twice the PEs' memory)\n"
            "  -h, --help         this text, with the environment variables PEs read\n"
            "Seconds: a number above 0 with an optional fraction (30, 0.5), at most %.0f.\n"
            "A second SIGINT/SIGTERM/SIGHUP to symrun kills the PEs.\n",
            MAX_PES, MAX_RESTARTS, SYM_MAX_SECONDS);
}

/* A usage error: why, the options, exit status 2. */
static noreturn void usage(const char *why) {
    note("%s", why);
    print_usage(stderr);
    exit(EXIT_USAGE);
}

/* --help: everything, on stdout, exit status 0. */
static noreturn void help(void) {
    print_usage(stdout);
    fputs("\nsymrun exits 0 when every PE exits 0; otherwise with the first failing PE's\n"
          "status (128+N for signal N), 124 after --timeout or --hang-timeout, 128+N when a\n"
          "second signal N killed the job, 2 for its own usage errors; PEs stopped by a\n"
          "signal that exit 130 (symtrain train with nothing saved) make it 130.\n\n"
          SYM_ENV_HELP_RUNTIME SYM_ENV_HELP_TRAIN,
          stdout);
    exit(0);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- arguments ---- */

/* The same parsers as the PEs' settings (src/util/env.c): one rule per kind. */
static long parse_int(const char *s, const char *what, long min, long max) {
    long v;
    if (sym__parse_int(s, min, max, &v)) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s '%s' is not a whole number between %ld and %ld", what, s,
                 min, max);
        usage(msg);
    }
    return v;
}

static double parse_seconds(const char *s, const char *what) {
    double v;
    if (sym__parse_seconds(s, &v)) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "%s '%s' is not a number of seconds: %s takes a positive number, e.g. 30 or "
                 "0.5, at most %.0f (no sign, exponent, inf or nan)",
                 what, s, what, SYM_MAX_SECONDS);
        usage(msg);
    }
    return v;
}

/* Is `prog` something execvp can run? */
static int runnable(const char *prog, char *why, size_t len) {
    if (strchr(prog, '/')) {
        struct stat st;
        if (stat(prog, &st) < 0) {
            snprintf(why, len, "program '%s' does not exist", prog);
            return 0;
        }
        if (S_ISDIR(st.st_mode) || access(prog, X_OK) < 0) {
            snprintf(why, len, "program '%s' is not executable", prog);
            return 0;
        }
        return 1;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    char buf[PATH_MAX];
    for (const char *p = path; *p;) {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, n ? p : ".", prog);
        struct stat st;
        if (stat(buf, &st) == 0 && !S_ISDIR(st.st_mode) && access(buf, X_OK) == 0) return 1;
        p += n + (c ? 1 : 0);
        if (!c) break;
    }
    snprintf(why, len, "program '%s' was not found in PATH", prog);
    return 0;
}

static void parse_args(int argc, char **argv, options_t *o) {
    memset(o, 0, sizeof *o);
    o->npes = -1;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-') break;
        const char *val = NULL;
        if (!strcmp(a, "-n") || !strcmp(a, "-np") || !strcmp(a, "--np") ||
            !strcmp(a, "--timeout") || !strcmp(a, "--hang-timeout") ||
            !strcmp(a, "--max-restarts")) {
            if (i + 1 >= argc) {
                char msg[64];
                snprintf(msg, sizeof msg, "%s needs a value", a);
                usage(msg);
            }
            val = argv[++i];
        }
        if (!strcmp(a, "-n") || !strcmp(a, "-np") || !strcmp(a, "--np")) {
            o->npes = (int)parse_int(val, "the number of PEs", 1, MAX_PES);
        } else if (!strcmp(a, "--timeout")) {
            o->timeout = parse_seconds(val, "--timeout");
        } else if (!strcmp(a, "--hang-timeout")) {
            o->hang_timeout = parse_seconds(val, "--hang-timeout");
        } else if (!strcmp(a, "--max-restarts")) {
            o->max_restarts = (int)parse_int(val, "--max-restarts", 0, MAX_RESTARTS);
        } else if (!strcmp(a, "--tag-output")) {
            o->tag_output = 1;
        } else if (!strcmp(a, "--spare")) {
            o->spare = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help();
        } else {
            char msg[128];
            snprintf(msg, sizeof msg, "unknown option '%s'", a);
            usage(msg);
        }
    }
    if (o->npes < 0) usage("give the number of PEs with -n N");
    if (o->spare && !o->max_restarts)
        usage("--spare starts the PEs of a restart ahead of time: give --max-restarts K too");
    if (i >= argc) usage("no program to run");
    char why[PATH_MAX + 64];
    if (!runnable(argv[i], why, sizeof why)) usage(why);
    o->argv = argv + i;
    o->argc = argc - i;
}

/* ---- signals ---- */

static void on_signal(int sig, siginfo_t *info, void *uctx) {
    (void)uctx;
    int saved = errno;
    if (sig != SIGCHLD) {
        got_signal = sig;
        from_terminal = info && info->si_code == SI_KERNEL;
        signals++;
    }
    char c = (char)sig;
    ssize_t w = write(sig_pipe[1], &c, 1);
    (void)w;
    errno = saved;
}

static void setup_signals(void) {
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        perror("symrun: pipe");
        exit(1);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* ---- starting PEs ---- */

/* Start PE `rank` of attempt `restart`; a spare (--spare) gets a pipe to wait
 * on (SYMTRAIN_SPARE_FD) and its output goes through symrun, held. */
static void start_pe(const options_t *o, pe_t *pes, int rank, int restart, int beats_fd,
                     int spare) {
    pe_t *p = &pes[rank];
    int sv[2], out[2][2] = {{-1, -1}, {-1, -1}}, go[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        perror("symrun: socketpair");
        exit(1);
    }
    if (spare && pipe2(go, O_CLOEXEC) < 0) {
        perror("symrun: pipe");
        exit(1);
    }
    if (o->tag_output || spare)
        for (int s = 0; s < 2; s++)
            if (pipe2(out[s], O_CLOEXEC) < 0) {
                perror("symrun: pipe");
                exit(1);
            }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("symrun: fork");
        exit(1);
    }
    if (pid == 0) {
        /* Die with symrun, however it ends. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
        signal(SIGPIPE, SIG_DFL);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(SIGCHLD, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        int fd = dup(sv[1]); /* without CLOEXEC: the program inherits it */
        if (out[0][1] >= 0) {
            dup2(out[0][1], STDOUT_FILENO);
            dup2(out[1][1], STDERR_FILENO);
        }
        if (rank != 0 || spare) {
            int dn = open("/dev/null", O_RDONLY);
            if (dn >= 0) dup2(dn, STDIN_FILENO);
        }
        char v[32];
        snprintf(v, sizeof v, "%d", fd);
        setenv("SYMTRAIN_BOOT_FD", v, 1);
        snprintf(v, sizeof v, "%d", rank);
        setenv("SYMTRAIN_RANK", v, 1);
        snprintf(v, sizeof v, "%d", o->npes);
        setenv("SYMTRAIN_SIZE", v, 1);
        snprintf(v, sizeof v, "%d", restart);
        setenv("SYMTRAIN_RESTART_COUNT", v, 1);
        if (beats_fd >= 0) {
            snprintf(v, sizeof v, "%d", dup(beats_fd)); /* without CLOEXEC */
            setenv("SYMTRAIN_HEARTBEAT_FD", v, 1);
        } else {
            unsetenv("SYMTRAIN_HEARTBEAT_FD"); /* not one a symrun above us made */
        }
        if (spare) {
            snprintf(v, sizeof v, "%d", dup(go[0])); /* without CLOEXEC */
            setenv("SYMTRAIN_SPARE_FD", v, 1);
        } else {
            unsetenv("SYMTRAIN_SPARE_FD");
        }
        if (dying[0] && !spare) /* a spare learns them when it takes over */
            setenv("SYMTRAIN_DYING_PIDS", dying, 1);
        else
            unsetenv("SYMTRAIN_DYING_PIDS");
        if (store_fd >= 0) {
            snprintf(v, sizeof v, "%d", dup(store_fd)); /* without CLOEXEC */
            setenv("SYMTRAIN_MEMCKPT_FD", v, 1);
        } else {
            unsetenv("SYMTRAIN_MEMCKPT_FD");
        }
        execvp(o->argv[0], o->argv);
        fprintf(stderr, "symrun: PE %d: cannot run %s: %s\n", rank, o->argv[0], strerror(errno));
        _exit(127);
    }
    close(sv[1]);
    if (go[0] >= 0) close(go[0]);
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->sock = sv[0];
    p->running = 1;
    p->beat_at = now();
    p->go_fd = go[1];
    p->hold = spare;
    for (int s = 0; s < 2; s++) {
        p->out[s] = out[s][0];
        if (out[s][1] >= 0) close(out[s][1]);
        if (p->out[s] >= 0) fcntl(p->out[s], F_SETFL, O_NONBLOCK);
    }
}

/* ---- output tagging ---- */

static void emit(int fd, int rank, const char *s, size_t n) {
    char prefix[32] = "";
    int pl = tag_output ? snprintf(prefix, sizeof prefix, "[PE %d] ", rank) : 0;
    char *buf = malloc((size_t)pl + n + 1);
    if (!buf) return;
    memcpy(buf, prefix, (size_t)pl);
    memcpy(buf + pl, s, n);
    size_t len = (size_t)pl + n;
    if (!n || s[n - 1] != '\n') buf[len++] = '\n';
    sym__wire_write(fd, buf, len);
    free(buf);
}

/* Read what PE `rank` wrote to stream s (0 stdout, 1 stderr) and pass on whole
 * lines. With `last`, nothing more is awaited: an empty pipe counts as closed. */
static void pass_lines(pe_t *p, int rank, int s, int eof);

static void drain_output(pe_t *p, int rank, int s, int eof, int last) {
    if (!eof) {
        char buf[4096];
        ssize_t n = read(p->out[s], buf, sizeof buf);
        if (n < 0 && (errno == EAGAIN || errno == EINTR) && !last) return;
        if (n <= 0) {
            eof = 1;
        } else {
            char *nl = realloc(p->line[s], p->line_len[s] + (size_t)n);
            if (!nl) return;
            p->line[s] = nl;
            memcpy(nl + p->line_len[s], buf, (size_t)n);
            p->line_len[s] += (size_t)n;
        }
    }
    if (p->hold && !eof) return; /* a spare's, until it takes over */
    pass_lines(p, rank, s, eof);
}

/* Emit every whole line of stream s that PE `rank` wrote; keep the rest (all
 * of it at eof, which closes the stream). */
static void pass_lines(pe_t *p, int rank, int s, int eof) {
    int fd = s == 0 ? STDOUT_FILENO : STDERR_FILENO;
    size_t start = 0;
    for (size_t i = 0; i < p->line_len[s]; i++)
        if (p->line[s][i] == '\n') {
            emit(fd, rank, p->line[s] + start, i + 1 - start);
            start = i + 1;
        }
    if (eof && start < p->line_len[s]) {
        emit(fd, rank, p->line[s] + start, p->line_len[s] - start);
        start = p->line_len[s];
    }
    if (start) memmove(p->line[s], p->line[s] + start, p->line_len[s] - start); /* line may be NULL */
    p->line_len[s] -= start;
    if (eof) {
        close(p->out[s]);
        p->out[s] = -1;
        free(p->line[s]);
        p->line[s] = NULL;
        p->line_len[s] = 0;
    }
}

/* ---- the job ---- */

typedef enum {
    JOB_OK,
    JOB_FAILED,
    JOB_HUNG, /* --hang-timeout: restarted like a failure */
    JOB_TIMEOUT,
    JOB_SIGNALLED, /* every PE ended cleanly after our signal */
    JOB_KILLED,    /* a second signal: the PEs were killed */
    JOB_GLOBAL_EXIT
} outcome_t;

typedef struct {
    pe_t *pes;
    int npes;
    int gathered; /* PEs whose part of the all-gather has arrived */
    outcome_t outcome;
    int exit_code;
    /* The first PE whose end failed the job, reported once the others have
     * had FAIL_GRACE_MS (until grace_until) to end by themselves. */
    int failed_pe; /* -1: none */
    int failed_unfinalized; /* it exited 0 without shmem_finalize */
    double grace_until;     /* 0: no grace running */
    const volatile uint64_t *beats; /* the heartbeat file, slot per PE; NULL: unwatched */
    double gather_since;    /* when the first part of the pending all-gather came */
    int stop_code;          /* a PE stopped by our signal exited with it (130: nothing saved) */
    int restart_next;       /* --max-restarts: a failure starts the job again */
    int fast_end;           /* a PE was killed by a signal and a restart follows: no grace */
    int beats_fd;           /* the heartbeat file's descriptor; -1: unwatched */
    double started;         /* when its PEs were started */
} job_t;

/* --spare: the next attempt's PEs, started while this one runs; NULL: none */
static job_t *spare_job;
static int spare_broken; /* spares failed once: no more are started */

static void describe_end(const pe_t *p, int rank, char *buf, size_t len) {
    if (WIFEXITED(p->status))
        snprintf(buf, len, "PE %d (pid %d) exited with status %d", rank, (int)p->pid,
                 WEXITSTATUS(p->status));
    else if (WIFSIGNALED(p->status))
        snprintf(buf, len, "PE %d (pid %d) was killed by signal %d (%s)", rank, (int)p->pid,
                 WTERMSIG(p->status), strsignal(WTERMSIG(p->status)));
    else
        snprintf(buf, len, "PE %d (pid %d) ended", rank, (int)p->pid);
}

static int running_count(const job_t *j) {
    int n = 0;
    for (int i = 0; i < j->npes; i++) n += j->pes[i].running;
    return n;
}

/* pid ended with wait status st: a PE of job j or of the spare attempt (an
 * earlier attempt's, reaped late, is neither). */
static void ended(job_t *j, pid_t pid, int st) {
    job_t *jobs[2] = {j, spare_job};
    for (int k = 0; k < 2; k++)
        for (int i = 0; jobs[k] && i < jobs[k]->npes; i++)
            if (jobs[k]->pes[i].pid == pid && jobs[k]->pes[i].running) {
                jobs[k]->pes[i].running = 0;
                jobs[k]->pes[i].status = st;
            }
}

static void reap(job_t *j) {
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0) return;
        ended(j, pid, st);
    }
}

/* Forward what the PEs write (--tag-output) for up to `ms` milliseconds, or
 * sleep that long when no pipe is open. */
static void pump_output(job_t *j, int ms) {
    struct pollfd *fds = calloc((size_t)j->npes * 2 + 1, sizeof *fds);
    if (!fds) return;
    int n = 0;
    for (int i = 0; i < j->npes; i++)
        for (int s = 0; s < 2; s++)
            if (j->pes[i].out[s] >= 0) {
                fds[n].fd = j->pes[i].out[s];
                fds[n++].events = POLLIN;
            }
    if (poll(fds, (nfds_t)n, ms) > 0)
        for (int k = 0, m = 0; k < j->npes * 2 && m < n; k++) {
            pe_t *p = &j->pes[k / 2];
            if (p->out[k % 2] < 0) continue;
            if (fds[m].revents) drain_output(p, k / 2, k % 2, !(fds[m].revents & POLLIN), 0);
            m++;
        }
    free(fds);
}

/* SIGTERM every running PE, then SIGKILL whatever is left after the grace
 * time; their output is forwarded meanwhile (a PE may explain on SIGTERM). */
static void end_all(job_t *j, int first_sig) {
    for (int i = 0; i < j->npes; i++)
        if (j->pes[i].running) kill(j->pes[i].pid, first_sig);
    double deadline = now() + KILL_GRACE_MS / 1000.0;
    while (running_count(j) && now() < deadline) {
        pump_output(j, 5);
        reap(j);
    }
    for (int i = 0; i < j->npes; i++)
        if (j->pes[i].running) kill(j->pes[i].pid, SIGKILL);
    while (running_count(j)) {
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0 && errno != EINTR) break;
        if (pid > 0) ended(j, pid, st);
    }
}

/* A job whose PE killed by a signal restarts it from the store at once
 * (check_ended's fast_end): keeping snapshots there, a restart to follow. */
static int fast_restart(const job_t *j) {
    struct stat st;
    return j->restart_next && !got_signal && store_fd >= 0 && fstat(store_fd, &st) == 0 &&
           st.st_size > 0;
}

/* A PE that has begun to exit on a signal, seen before the kernel has freed
 * its memory: ended now, with the status waitpid will give. */
static void see_killed(job_t *j) {
    for (int i = 0; i < j->npes; i++) {
        pe_t *p = &j->pes[i];
        int code;
        if (p->running && sym__proc_exiting(p->pid, &code) && WIFSIGNALED(code)) {
            p->running = 0;
            p->status = code;
            p->unreaped = 1;
        }
    }
}

/* Resident memory of pid, bytes (shared pages counted in every process that
 * maps them: more than the processes hold together). */
static double resident_bytes(pid_t pid) {
    char path[64];
    long pages = 0, rss = 0;
    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "re");
    if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    if (f) fclose(f);
    return (double)rss * (double)sysconf(_SC_PAGESIZE);
}

static double mem_available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

/* fast_end: SIGKILL the PEs still running and let the next attempt start as
 * soon as none of their threads runs, their memory still being freed, when
 * the machine has room for both attempts; they are reaped whenever they end.
 * Their pids (and the killed PE's) go to the next attempt. 0 when it had to
 * wait for them instead (no room, or a thread that would not stop). */
static int let_go(job_t *j) {
    double held = 0;
    for (int i = 0; i < j->npes; i++)
        if (j->pes[i].running || j->pes[i].unreaped) held += resident_bytes(j->pes[i].pid);
    if (!spare_job && mem_available_bytes() < held) return 0; /* a spare has its memory */
    for (int i = 0; i < j->npes; i++)
        if (j->pes[i].running) kill(j->pes[i].pid, SIGKILL);
    double until = now() + STOP_WAIT_S;
    for (int i = 0; i < j->npes; i++)
        while (j->pes[i].running && !sym__proc_all_exiting(j->pes[i].pid)) {
            if (now() > until) return 0;
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    size_t n = 0;
    dying[0] = '\0';
    for (int i = 0; i < j->npes; i++) {
        pe_t *p = &j->pes[i];
        if (p->running) {
            p->running = 0;
            p->unreaped = 1;
            p->status = SIGKILL; /* killed, as waitpid would say */
        }
        if (p->unreaped && n + 16 < sizeof dying)
            n += (size_t)snprintf(dying + n, sizeof dying - n, "%s%d", n ? "," : "", (int)p->pid);
    }
    return 1;
}

static void fail(job_t *j, outcome_t why, int code) {
    if (j->outcome == JOB_OK) {
        j->outcome = why;
        j->exit_code = code;
    }
}

static void close_sock(pe_t *p) {
    if (p->sock >= 0) close(p->sock);
    p->sock = -1;
}

/* Answer the all-gather once every PE has sent its part. */
static void complete_gather(job_t *j) {
    uint32_t len = j->pes[0].gather_len;
    for (int i = 0; i < j->npes; i++)
        if (j->pes[i].gather_len != len) {
            note("PE %d sent %u bytes to an all-gather and PE 0 %u: the PEs run different "
                 "programs; ending the job",
                 i, j->pes[i].gather_len, len);
            fail(j, JOB_FAILED, 1);
            return;
        }
    size_t total = (size_t)len * (size_t)j->npes;
    char *all = malloc(total ? total : 1);
    if (!all) {
        note("out of memory");
        fail(j, JOB_FAILED, 1);
        return;
    }
    for (int i = 0; i < j->npes; i++) {
        memcpy(all + (size_t)i * len, j->pes[i].gather, len);
        free(j->pes[i].gather);
        j->pes[i].gather = NULL;
        j->pes[i].gather_ready = 0;
    }
    for (int i = 0; i < j->npes; i++)
        if (j->pes[i].sock >= 0) sym__wire_send(j->pes[i].sock, SYM_WIRE_ALLGATHER, all, (uint32_t)total);
    j->gathered = 0;
    free(all);
}

static void handle_message(job_t *j, int rank) {
    pe_t *p = &j->pes[rank];
    sym_wire_hdr_t h;
    char *payload;
    p->beat_at = now(); /* talking to us is progress */
    if (sym__wire_recv(p->sock, &h, &payload)) {
        close_sock(p); /* it exited or finalized; its exit status tells the rest */
        return;
    }
    switch (h.type) {
    case SYM_WIRE_ALLGATHER:
        p->initialized = 1;
        if (p->gather_ready) {
            note("PE %d started a second all-gather before the first ended", rank);
            fail(j, JOB_FAILED, 1);
            free(payload);
            return;
        }
        p->gather = payload;
        p->gather_len = h.len;
        p->gather_ready = 1;
        if (j->gathered == 0) j->gather_since = now();
        if (++j->gathered == j->npes) complete_gather(j);
        return;
    case SYM_WIRE_ABORT: {
        int32_t st = 1;
        if (h.len >= sizeof st) memcpy(&st, payload, sizeof st);
        /* The runtime's fatal errors end the job this way too, after their message. */
        note("PE %d ended the job with status %d (shmem_global_exit(%d), or the error it "
             "reported)", rank, (int)st, (int)st);
        fail(j, JOB_GLOBAL_EXIT, st);
        break;
    }
    case SYM_WIRE_FINI:
        p->finalized = 1;
        break;
    default:
        note("PE %d sent an unknown message (type %u)", rank, h.type);
        fail(j, JOB_FAILED, 1);
        break;
    }
    free(payload);
}

/* A PE that has exited may have said something first (shmem_finalize done,
 * shmem_global_exit): read it before judging how the PE ended, or a PE reaped
 * before its last message is read looks as if it never finalized. Only what is
 * already there is read (a process it forked may still hold the socket). */
static void drain_ended(job_t *j) {
    for (int i = 0; i < j->npes && j->outcome == JOB_OK; i++) {
        pe_t *p = &j->pes[i];
        while (!p->running && p->sock >= 0 && j->outcome == JOB_OK) {
            struct pollfd pfd = {p->sock, POLLIN, 0};
            if (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & (POLLIN | POLLHUP))) break;
            handle_message(j, i);
        }
    }
}

/* PE `rank` failed the job: note it and start the others' grace time. */
static void pe_failed(job_t *j, int rank, int unfinalized, int code) {
    fail(j, JOB_FAILED, code);
    j->failed_pe = rank;
    j->failed_unfinalized = unfinalized;
    j->grace_until = now() + FAIL_GRACE_MS / 1000.0;
}

/* Say once how the job failed, after the grace time: the PE's end, and how
 * many PEs symrun must now end itself. */
static void report_failure(const job_t *j) {
    if (j->failed_pe < 0) return;
    const pe_t *p = &j->pes[j->failed_pe];
    int others = running_count(j);
    char what[160];
    describe_end(p, j->failed_pe, what, sizeof what);
    if (j->failed_unfinalized)
        note("%s without calling shmem_finalize while other PEs still run; ending the job", what);
    else if (WIFEXITED(p->status) && WEXITSTATUS(p->status) == EXIT_USAGE)
        note("PE %d exited with status %d (a usage error)%s", j->failed_pe, EXIT_USAGE,
             others ? "; ending the job" : "");
    else if (others)
        note("%s; ending the other %d PE%s", what, others, others == 1 ? "" : "s");
    else
        note("%s", what);
}

/* Look at PEs that ended: a failure ends the job (after the grace time). */
static void check_ended(job_t *j, int *seen) {
    for (int i = 0; i < j->npes; i++) {
        pe_t *p = &j->pes[i];
        if (p->running || seen[i]) continue;
        seen[i] = 1;
        if (j->outcome != JOB_OK) continue; /* already ending; this is the fallout */
        if (WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0) {
            if (p->initialized && !p->finalized && running_count(j)) pe_failed(j, i, 1, 1);
            continue;
        }
        int code = WIFEXITED(p->status) ? WEXITSTATUS(p->status)
                                        : 128 + (WIFSIGNALED(p->status) ? WTERMSIG(p->status) : 0);
        if (got_signal && WIFEXITED(p->status) && code == 130) {
            /* Stopped by the signal with nothing saved (symtrain train's
             * status for it): a stop, not a failure; the job ends with it. */
            j->stop_code = code;
            continue;
        }
        pe_failed(j, i, 0, code);
        struct stat st;
        if (WIFSIGNALED(p->status) && j->restart_next && !got_signal && store_fd >= 0 &&
            fstat(store_fd, &st) == 0 && st.st_size > 0) {
            /* Killed (a crash, the OOM killer, a lost machine) in a job that
             * keeps in-memory snapshots: the others wait for it in vain, the
             * restart resumes from the store, not from a checkpoint still
             * being written, and it waits for them: end them at once. */
            j->grace_until = 0;
            j->fast_end = 1;
        }
    }
}

/* ---- liveness (--hang-timeout) ---- */

/* The heartbeat file of a job: one slot per PE, mapped here read-only; its
 * descriptor goes to each PE. -1 (and *map NULL) when nothing is watched. */
static int make_beats(const options_t *o, const volatile uint64_t **map) {
    *map = NULL;
    if (o->hang_timeout <= 0) return -1;
    size_t size = (size_t)o->npes * SYM_HEARTBEAT_SLOT;
    int fd = memfd_create("symrun-heartbeat", MFD_CLOEXEC);
    void *m = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)size) == 0)
        m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        note("cannot make the heartbeat file for --hang-timeout: %s", strerror(errno));
        exit(1);
    }
    *map = m;
    return fd;
}

/* The state letter of /proc/PID/stat (R, S, D, T...), '?' when unknown. */
static char proc_state(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return '?';
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return '?';
    buf[n] = 0;
    const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    return paren && paren[1] == ' ' && paren[2] ? paren[2] : '?';
}

/* The first running PE whose heartbeat has stood still for `limit` seconds
 * ends the job (who is held to it when: the top of this file). */
static void check_liveness(job_t *j, double limit) {
    if (!j->beats || j->outcome != JOB_OK) return;
    double t = now();
    for (int i = 0; i < j->npes; i++) {
        pe_t *p = &j->pes[i];
        if (!p->running || p->finalized) continue;
        uint64_t b = j->beats[(size_t)i * (SYM_HEARTBEAT_SLOT / sizeof(uint64_t))];
        if (b != p->beat || p->gather_ready) { /* progress, or waiting for us */
            p->beat = b;
            p->beat_at = t;
            continue;
        }
        double since = p->beat_at;
        char st = '?';
        if (!b && !p->initialized) {
            /* Not in shmem_init yet (a program's own start-up may be long):
             * held to the limit only once another PE waits for it in the
             * bootstrap, or while it is stopped. */
            if (j->gathered) {
                if (j->gather_since > since) since = j->gather_since;
            } else if ((st = proc_state(p->pid)) != 'T' && st != 't') {
                p->beat_at = t;
                continue;
            }
        }
        if (t - since < limit) continue;
        if (st == '?') st = proc_state(p->pid);
        note("PE %d (pid %d) made no progress for %g s (--hang-timeout)%s; ending the job", i,
             (int)p->pid, limit,
             st == 'T' || st == 't' ? ": it is stopped (SIGSTOP, or a debugger)"
             : st == 'D'            ? ": it is blocked in the kernel (state D)"
             : b == 0               ? ": it never reached shmem_init"
                                    : "");
        fail(j, JOB_HUNG, EXIT_TIMEOUT);
        return;
    }
}

/* ---- the spare attempt (--spare) ---- */

/* Start the PEs of attempt `restart` into job j (zeroed). As spares they
 * start up (shmem_init, data, model, buffers) and wait on their go pipe
 * while the current attempt trains (symtrain train does; a program that
 * never reads the pipe runs a second time beside the job, and its end drops
 * the spares). */
static void start_job(const options_t *o, job_t *j, int restart, int spare) {
    j->npes = o->npes;
    j->failed_pe = -1;
    if (!(j->pes = calloc((size_t)o->npes, sizeof(pe_t)))) {
        note("out of memory");
        exit(1);
    }
    j->beats_fd = make_beats(o, &j->beats);
    j->started = now();
    for (int r = 0; r < o->npes; r++) start_pe(o, j->pes, r, restart, j->beats_fd, spare);
}

static void start_spare(const options_t *o, int restart) {
    if (!(spare_job = calloc(1, sizeof *spare_job))) {
        note("out of memory");
        exit(1);
    }
    start_job(o, spare_job, restart, 1);
}

/* The heartbeat file, sockets, pipes and buffers of a job whose PEs ended. */
static void release(job_t *j) {
    for (int i = 0; i < j->npes; i++) {
        pe_t *p = &j->pes[i];
        close_sock(p);
        if (p->go_fd >= 0) close(p->go_fd);
        for (int k = 0; k < 2; k++) {
            if (p->out[k] >= 0) close(p->out[k]);
            free(p->line[k]);
        }
        free(p->gather);
    }
    if (j->beats_fd >= 0) {
        munmap((void *)j->beats, (size_t)j->npes * SYM_HEARTBEAT_SLOT);
        close(j->beats_fd);
    }
    free(j->pes);
}

/* End the spare PEs and forget them; `show`: pass on what they wrote first. */
static void drop_spare(int show) {
    job_t *s = spare_job;
    if (!s) return;
    spare_job = NULL;
    for (int i = 0; i < s->npes; i++)
        if (s->pes[i].running) kill(s->pes[i].pid, SIGKILL);
    for (int i = 0; i < s->npes; i++) {
        pe_t *p = &s->pes[i];
        int st;
        while (p->running && waitpid(p->pid, &st, 0) < 0 && errno == EINTR) {
        }
        p->running = 0;
        p->hold = 0;
        for (int k = 0; k < 2 && show; k++)
            while (p->out[k] >= 0) drain_output(p, i, k, 0, 1);
    }
    release(s);
    free(s);
}

/* A spare PE that ended, or a spare attempt that failed, before it was
 * needed: said once; the restart starts new PEs, and no more spares. */
static void check_spare(void) {
    job_t *s = spare_job;
    for (int i = 0; s && i < s->npes; i++) {
        if (s->pes[i].running && s->outcome == JOB_OK) continue;
        char what[160];
        if (s->pes[i].running)
            snprintf(what, sizeof what, "the spare attempt failed");
        else
            describe_end(&s->pes[i], i, what, sizeof what);
        note("a spare PE ended before it was needed (%s); a restart starts new PEs, and no "
             "more spares are started",
             what);
        spare_broken = 1;
        drop_spare(1);
        return;
    }
}

/* Job j takes over the spare attempt's PEs: each is told the pids of the
 * attempt before, still ending ("pid,pid\n"), and goes on from its wait. */
static void take_spare(job_t *j) {
    job_t *s = spare_job;
    spare_job = NULL;
    *j = *s;
    free(s);
    char msg[sizeof dying + 1];
    int n = snprintf(msg, sizeof msg, "%s\n", dying);
    for (int i = 0; i < j->npes; i++) {
        pe_t *p = &j->pes[i];
        if (sym__wire_write(p->go_fd, msg, (size_t)n)) /* it just ended: seen as such */
            note("could not tell spare PE %d (pid %d) to go on: %s", i, (int)p->pid,
                 strerror(errno));
        close(p->go_fd);
        p->go_fd = -1;
        p->hold = 0;
        p->beat = j->beats ? j->beats[(size_t)i * (SYM_HEARTBEAT_SLOT / sizeof(uint64_t))] : 0;
        p->beat_at = now();
        for (int k = 0; k < 2; k++)
            if (p->out[k] >= 0) pass_lines(p, i, k, 0);
    }
}

static outcome_t run_job(const options_t *o, int restart, int *exit_code) {
    job_t j = {0};
    int npes = o->npes;
    int *seen = calloc((size_t)npes, sizeof(int));
    struct pollfd *fds = calloc((size_t)npes * 6 + 1, sizeof *fds);
    int *owner = calloc((size_t)npes * 6 + 1, sizeof *owner);
    if (!seen || !fds || !owner) {
        note("out of memory");
        exit(1);
    }
    if (spare_job)
        take_spare(&j);
    else
        start_job(o, &j, restart, 0);
    j.restart_next = restart < o->max_restarts;
    /* the next attempt's spares: at once on the first, a while after a restart
     * (not beside the restore) */
    double spare_due =
        o->spare && !spare_broken && j.restart_next ? now() + (restart ? SPARE_DELAY_S : 0) : 0;
    double deadline = o->timeout > 0 ? now() + o->timeout : 0;
    int forwarded = 0;

    dying[0] = '\0'; /* this attempt's PEs have the last one's pids */
    for (;;) {
        reap(&j);
        if (got_signal) drop_spare(0);
        check_spare();
        if (spare_due && now() >= spare_due && j.outcome == JOB_OK && !got_signal) {
            start_spare(o, restart + 1);
            spare_due = 0;
        }
        int fast = fast_restart(&j);
        if (fast) see_killed(&j);
        drain_ended(&j);
        check_ended(&j, seen);
        int outputs_open = 0;
        for (int i = 0; i < j.npes; i++) outputs_open += (j.pes[i].out[0] >= 0) + (j.pes[i].out[1] >= 0);
        if (!running_count(&j) && !outputs_open) break;
        /* A failure ends the loop at once, or once the others' grace is over. */
        int in_grace = j.grace_until && now() < j.grace_until && running_count(&j);
        if (j.outcome != JOB_OK && !in_grace) break;
        if (signals >= 2) {
            /* The first one did not end the job (a PE stopped, wedged or slow
             * to save): end it now. */
            note_after_signal("received %s again; killing the PEs", strsignal(got_signal));
            for (int i = 0; i < j.npes; i++)
                if (j.pes[i].running) kill(j.pes[i].pid, SIGKILL);
            fail(&j, JOB_KILLED, 128 + got_signal);
            break;
        }
        if (got_signal && !forwarded) {
            /* Pass it on (training saves a checkpoint on SIGTERM/SIGINT). */
            forwarded = got_signal;
            if (from_terminal) { /* they have it already: a second one would kill them */
                note_after_signal("received %s from the terminal, as the PEs did (a second one "
                                  "kills them)", strsignal(got_signal));
            } else {
                note_after_signal("received %s; passing it to the PEs (a second signal kills "
                                  "them)", strsignal(got_signal));
                for (int i = 0; i < j.npes; i++)
                    if (j.pes[i].running) kill(j.pes[i].pid, got_signal);
            }
        }
        check_liveness(&j, o->hang_timeout);
        if (j.outcome == JOB_HUNG) break;
        int n = 0;
        fds[n].fd = sig_pipe[0];
        fds[n].events = POLLIN;
        owner[n++] = -1;
        for (int k = 0; k < 2 * npes; k++) { /* this attempt's PEs, then the spares */
            pe_t *p = k < npes ? &j.pes[k] : spare_job ? &spare_job->pes[k - npes] : NULL;
            if (!p) break;
            if (p->sock >= 0) {
                fds[n].fd = p->sock;
                fds[n].events = POLLIN;
                owner[n++] = k * 3;
            }
            for (int s = 0; s < 2; s++)
                if (p->out[s] >= 0) {
                    fds[n].fd = p->out[s];
                    fds[n].events = POLLIN;
                    owner[n++] = k * 3 + 1 + s;
                }
        }
        int wait_ms = fast ? FAST_POLL_MS : 1000;
        if (spare_due && (spare_due - now()) * 1000 < wait_ms)
            wait_ms = spare_due > now() ? (int)((spare_due - now()) * 1000) + 1 : 0;
        if (j.beats && o->hang_timeout * 250 < wait_ms) wait_ms = (int)(o->hang_timeout * 250) + 1;
        if (in_grace && (j.grace_until - now()) * 1000 < wait_ms)
            wait_ms = (int)((j.grace_until - now()) * 1000) + 1;
        if (deadline) {
            double left = deadline - now();
            if (left <= 0) {
                if (j.outcome == JOB_OK)
                    note("timeout: the job ran longer than %g s; ending %d PE%s", o->timeout,
                         running_count(&j), running_count(&j) == 1 ? "" : "s");
                fail(&j, JOB_TIMEOUT, EXIT_TIMEOUT);
                break;
            }
            if (left * 1000 < wait_ms) wait_ms = (int)(left * 1000) + 1;
        }
        int rc = poll(fds, (nfds_t)n, wait_ms);
        if (rc < 0 && errno != EINTR) {
            perror("symrun: poll");
            fail(&j, JOB_FAILED, 1);
            break;
        }
        for (int k = 0; k < n && rc > 0; k++) {
            if (!fds[k].revents) continue;
            if (owner[k] < 0) {
                char buf[64];
                while (read(sig_pipe[0], buf, sizeof buf) > 0) {
                }
                continue;
            }
            int rank = owner[k] / 3, what = owner[k] % 3;
            job_t *of = rank < npes ? &j : spare_job;
            if (rank >= npes) rank -= npes;
            if (!of) continue; /* the spares were dropped meanwhile */
            if (what == 0)
                handle_message(of, rank);
            else
                drain_output(&of->pes[rank], rank, what - 1, !(fds[k].revents & POLLIN), 0);
            if (j.outcome != JOB_OK && !j.grace_until) break;
        }
    }

    report_failure(&j);
    if (j.fast_end && !let_go(&j))
        for (int i = 0; i < j.npes; i++) /* waited for after all, seen ending or not */
            if (j.pes[i].unreaped) j.pes[i].running = 1, j.pes[i].unreaped = 0;
    if (running_count(&j)) end_all(&j, j.fast_end ? SIGKILL : SIGTERM);
    for (int i = 0; i < j.npes; i++) {
        for (int s = 0; s < 2; s++)
            while (j.pes[i].out[s] >= 0) drain_output(&j.pes[i], i, s, 0, 1);
        close_sock(&j.pes[i]);
    }
    if (j.outcome == JOB_OK) {
        for (int i = 0; i < j.npes; i++) seen[i] = 0;
        check_ended(&j, seen); /* a last look at exit statuses */
    }
    if (j.outcome == JOB_OK && got_signal) {
        /* Every PE ended cleanly after our signal: graceful stop (130 where
         * one saved nothing). */
        j.outcome = JOB_SIGNALLED;
        j.exit_code = j.stop_code;
    }
    *exit_code = j.exit_code;
    outcome_t out = j.outcome;
    release(&j);
    free(seen);
    free(fds);
    free(owner);
    return out;
}

int main(int argc, char **argv) {
    options_t o;
    parse_args(argc, argv, &o);
    setup_signals();
    /* Empty until a PE sizes it; without it the PEs keep snapshots on the disk only. */
    char store_name[48]; /* named for this symrun in /proc/PID/fd, nowhere else */
    snprintf(store_name, sizeof store_name, "symrun-snapshots.%d", (int)getpid());
    store_fd = memfd_create(store_name, MFD_CLOEXEC);
    if (store_fd < 0) note("no in-memory snapshot store (memfd_create: %s)", strerror(errno));
    tag_output = o.tag_output;
    for (int restart = 0;; restart++) {
        int code = 0;
        outcome_t out = run_job(&o, restart, &code);
        int restartable = out == JOB_FAILED || out == JOB_HUNG;
        int again = restartable && restart < o.max_restarts && !got_signal;
        if (!again) drop_spare(0);
        if (out == JOB_OK || out == JOB_SIGNALLED) {
            if (restart && !code)
                note("the job succeeded after %d restart%s", restart, restart == 1 ? "" : "s");
            return code;
        }
        if (again) {
            if (spare_job)
                note("restarting the job (restart %d of %d): the spare PEs, started %.1f s "
                     "before, take over", restart + 1, o.max_restarts, now() - spare_job->started);
            else
                note("restarting the job (restart %d of %d)", restart + 1, o.max_restarts);
            continue;
        }
        if (out == JOB_GLOBAL_EXIT || out == JOB_KILLED) return code;
        if (restartable && o.max_restarts)
            note("giving up after %d restart%s", restart, restart == 1 ? "" : "s");
        return code ? code : 1;
    }
}
