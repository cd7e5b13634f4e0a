/*
 * train_tty — what a person sees at a terminal, through a real pseudo-terminal
 * (forkpty) of a set width running `symrun -n 2 symtrain train`:
 *   - at 80 and at 40 columns the progress bar is redrawn in place (\r, erase
 *     line) and no line on the screen is longer than the width (a longer one
 *     wraps, and every redraw then adds a line);
 *   - --progress plain on the terminal, and the default with stdout a file,
 *     give plain lines: no \r, no escape codes; --progress off none at all
 *     (the epoch summary still prints); a bad --progress value is a usage error;
 *   - Ctrl-C (the terminal's interrupt character, which signals symrun and
 *     the PEs at once) stops the job cleanly: symrun's message starts a line
 *     of its own (not glued onto the bar), and with nothing saved (no
 *     --ckpt-dir) the job exits 130, as shells expect.
 */
#include "train_e2e.h" /* first: it defines _GNU_SOURCE */

#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>

#define JOB "--generated --train-samples 800 --test-samples 32 --batch 16 --epochs 1"

typedef struct {
    char *out; /* everything the terminal showed, NUL-terminated */
    size_t len;
    int status; /* exit status, 128 + signal if killed */
} tty_run_t;

/* Run symrun -n 2 symtrain train ARGS on a pseudo-terminal `cols` wide, with
 * `env` (NAME=VALUE or NULL) added; with `interrupt_at`, type Ctrl-C once the
 * screen shows that text. */
static tty_run_t tty_run(int cols, const char *env, const char *args, const char *interrupt_at) {
    char line[1024];
    snprintf(line, sizeof line, "%s", args);
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)e2e_symrun;
    argv[n++] = "-n";
    argv[n++] = "2";
    argv[n++] = "--timeout";
    argv[n++] = "100";
    argv[n++] = (char *)e2e_symtrain;
    argv[n++] = "train";
    for (char *t = strtok(line, " "); t && n < 62; t = strtok(NULL, " ")) argv[n++] = t;
    argv[n] = NULL;
    struct winsize ws = {.ws_row = 24, .ws_col = (unsigned short)cols};
    int master;
    fflush(stdout);
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    CHECK(pid >= 0, "forkpty: %s", strerror(errno));
    if (pid == 0) {
        if (env) putenv((char *)env);
        execv(argv[0], argv);
        _exit(127);
    }
    tty_run_t r = {NULL, 0, -1};
    size_t cap = 1 << 16;
    r.out = malloc(cap);
    CHECK(r.out != NULL, "out of memory");
    int typed = 0;
    for (;;) {
        struct pollfd p = {master, POLLIN, 0};
        int k = poll(&p, 1, 100000);
        CHECK(k > 0, "the job on the terminal said nothing for 100 s");
        if (r.len + 4096 > cap) {
            cap *= 2;
            r.out = realloc(r.out, cap);
            CHECK(r.out != NULL, "out of memory");
        }
        ssize_t got = read(master, r.out + r.len, 4096);
        if (got <= 0) break; /* EIO: every process holding the terminal has ended */
        r.len += (size_t)got;
        r.out[r.len] = '\0';
        if (interrupt_at && !typed && strstr(r.out, interrupt_at)) {
            CHECK(write(master, "\003", 1) == 1, "typing Ctrl-C: %s", strerror(errno));
            typed = 1;
        }
    }
    close(master);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    CHECK(!interrupt_at || typed, "the terminal never showed \"%s\"", interrupt_at);
    return r;
}

static void show(const tty_run_t *r) {
    fprintf(stderr, "---- the terminal (escaped) ----\n");
    for (size_t i = 0; i < r->len; i++) {
        unsigned char c = (unsigned char)r->out[i];
        if (c == '\r') fputs("\\r", stderr);
        else if (c == 033) fputs("\\e", stderr);
        else fputc(c, stderr);
    }
    fprintf(stderr, "---- end ----\n");
}

/* The longest progress line the screen shows (text between \r / \n with an
 * ETA: what is redrawn in place), the erase-line code not counted. Other lines
 * (the banner) are written once and may wrap. */
static size_t longest_line(const tty_run_t *r, char *which, size_t len) {
    size_t best = 0, cur = 0, start = 0;
    for (size_t i = 0; i <= r->len; i++) {
        char c = i < r->len ? r->out[i] : '\n';
        if (c == '\r' || c == '\n') {
            if (cur > best && memmem(r->out + start, i - start, "ETA", 3)) {
                best = cur;
                snprintf(which, len, "%.*s", (int)(i - start), r->out + start);
            }
            cur = 0;
            start = i + 1;
        } else if (c == 033 && i + 2 < r->len && r->out[i + 1] == '[' && r->out[i + 2] == 'K') {
            i += 2;
        } else {
            cur++;
        }
    }
    return best;
}

/* An escape code, or a \r that is not the terminal's own end of line (a
 * pseudo-terminal writes \n as \r\n). */
static int has_escapes(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (s[i] == 033 || (s[i] == '\r' && (i + 1 >= len || s[i + 1] != '\n'))) return 1;
    return 0;
}

/* The bar at `cols` columns: drawn, and no line wider than the terminal. */
static void bar_fits(int cols) {
    tty_run_t r = tty_run(cols, NULL, JOB, NULL);
    char which[512];
    size_t longest = longest_line(&r, which, sizeof which);
    int redrawn = strstr(r.out, "\r\033[Kepoch 1/1") != NULL;
    if (r.status != 0 || !redrawn || longest >= (size_t)cols) show(&r);
    CHECK(r.status == 0, "%d columns: exit status %d", cols, r.status);
    CHECK(redrawn, "%d columns: no progress bar redrawn in place", cols);
    CHECK(longest < (size_t)cols, "%d columns: a progress line of %zu characters: \"%s\"", cols,
          longest,
          which);
    CHECK(longest > 0, "%d columns: no progress line", cols);
    printf("train_tty: %d columns: bar redrawn, longest line %zu\n", cols, longest);
    free(r.out);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_tty");

    bar_fits(80);
    bar_fits(40);

    /* --progress plain on a terminal: lines, no redraws. */
    tty_run_t r = tty_run(80, NULL, JOB " --progress plain --log-interval 0.05", NULL);
    int ok = r.status == 0 && !has_escapes(r.out, r.len) && strstr(r.out, "ETA");
    if (!ok) show(&r);
    CHECK(r.status == 0, "--progress plain: exit status %d", r.status);
    CHECK(!has_escapes(r.out, r.len), "--progress plain on a terminal drew with \\r or escapes");
    CHECK(strstr(r.out, "ETA"), "--progress plain: no progress line");
    free(r.out);

    /* --progress off: only the summary. */
    r = tty_run(80, NULL, JOB " --progress off --log-interval 0.05", NULL);
    ok = r.status == 0 && !strstr(r.out, "ETA") && strstr(r.out, "epoch 1/1  ");
    if (!ok) show(&r);
    CHECK(r.status == 0, "--progress off: exit status %d", r.status);
    CHECK(!strstr(r.out, "ETA"), "--progress off still drew progress");
    CHECK(strstr(r.out, "epoch 1/1  "), "--progress off lost the epoch's summary");
    free(r.out);

    /* stdout a file (the default, auto): plain lines, no escape codes. */
    const char *log = e2e_path("file.log");
    e2e_run(2, NULL, NULL, log, 0, JOB " --log-interval 0.05");
    size_t len;
    char *s = e2e_read(log, &len);
    if (has_escapes(s, len) || !strstr(s, "ETA")) e2e_show(log);
    CHECK(!has_escapes(s, len), "a file got \\r or escape codes");
    CHECK(strstr(s, "ETA"), "a file got no progress lines");
    free(s);
    log = e2e_path("bad.log");
    e2e_run(2, NULL, NULL, log, 2, JOB " --progress fancy");
    e2e_expect_log(log, "--progress 'fancy': use auto, plain, bar or off");
    printf("train_tty: --progress plain/off on a terminal, plain lines in a file, bad value refused\n");

    /* Ctrl-C at the terminal, no --ckpt-dir: a clean stop, 130, symrun's
     * message on a line of its own. */
    r = tty_run(80, NULL, "--generated --train-samples 60000 --test-samples 64 --batch 16 "
                          "--epochs 1", "ETA ");
    const char *msg = strstr(r.out, "symrun: received");
    int own_line = msg && msg > r.out && msg[-1] == '\n';
    if (r.status != 130 || !own_line || !strstr(r.out, "nothing saved")) show(&r);
    CHECK(msg, "Ctrl-C: symrun did not say it received the interrupt");
    CHECK(own_line, "Ctrl-C: symrun's message does not start a line");
    CHECK(strstr(r.out, "nothing saved"), "Ctrl-C: the job did not say it saved nothing");
    CHECK(r.status == 130, "Ctrl-C with nothing saved: exit status %d, want 130", r.status);
    free(r.out);
    printf("train_tty: Ctrl-C: clean stop, message on its own line, exit status 130\n");

    e2e_cleanup();
    printf("train_tty: PASS\n");
    return 0;
}
