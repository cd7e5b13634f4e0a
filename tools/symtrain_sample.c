/*
 * symtrain_sample.c — `symtrain sample`: text from a trained GPT.
 *
 *   symtrain sample --ckpt DIR [--prompt TEXT] [--max-new-tokens N]
 *                   [--temperature T] [--top-k K] [--seed S]
 *
 * DIR is a --ckpt-dir (its newest good checkpoint is used) or one step-*
 * directory, of either format. The model is rebuilt from the manifest's spec,
 * each weight read from the checkpoint's tensors (files verified against their
 * CRC32C first), and sym_model_generate extends the prompt's byte-level
 * tokens; the prompt and the new text go to stdout as they are drawn. The
 * same checkpoint, prompt and seed give the same text.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <symtrain/symtrain.h>

#include "symtrain_cli.h"

#define EXIT_USAGE 2

static const char sample_usage[] =
    "usage: symtrain sample --ckpt DIR [--prompt TEXT] [--max-new-tokens N]\n"
    "                       [--temperature T] [--top-k K] [--seed S]\n"
    "\n"
    "Generate text with a GPT trained by symtrain train --ckpt-dir DIR.\n"
    "  --ckpt DIR             a checkpoint directory (its newest good checkpoint) or one\n"
    "                         step-* directory in it\n"
    "  --prompt TEXT          the text to continue (default: a new line)\n"
    "  --max-new-tokens N     tokens to generate, 1 to 1000000 (default 256)\n"
    "  --temperature T        0 (always the likeliest) to 100 (default 1)\n"
    "  --top-k K              draw among the K likeliest; 0 = all (default 40)\n"
    "  --seed S               the draws (default 1)\n";

static int usage(const char *fmt, const char *a, const char *b) {
    fputs("symtrain: sample: ", stderr);
    fprintf(stderr, fmt, a, b);
    fputs("\n(symtrain sample --help lists the options)\n", stderr);
    return EXIT_USAGE;
}

static int number(const char *opt, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) return -1;
    (void)opt;
    *out = v;
    return 0;
}

static void put_token(void *user, int32_t tok) {
    (void)user;
    char text[SYM_TOKEN_TEXT_MAX];
    fwrite(text, 1, (size_t)sym_detokenize_one(tok, text), stdout);
    fflush(stdout);
}

int sym_cli_sample(int argc, char **argv) {
    const char *ckpt = NULL, *prompt = "\n";
    double max_new = 256, temperature = 1, top_k = 40, seed = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(sample_usage, stdout);
            return 0;
        }
        static const char *const valued[] = {"--ckpt", "--prompt", "--max-new-tokens",
                                             "--temperature", "--top-k", "--seed", NULL};
        int known = 0;
        for (int k = 0; valued[k]; k++) known |= !strcmp(a, valued[k]);
        if (!known) return usage("unknown option '%s'%s", a, "");
        if (i + 1 >= argc) return usage("%s needs a value%s", a, "");
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--ckpt"))
            ckpt = v;
        else if (!strcmp(a, "--prompt"))
            prompt = v;
        else if (!strcmp(a, "--max-new-tokens"))
            bad = number(a, v, 1, 1e6, &max_new) || max_new != floor(max_new);
        else if (!strcmp(a, "--temperature"))
            bad = number(a, v, 0, 100, &temperature);
        else if (!strcmp(a, "--top-k"))
            bad = number(a, v, 0, 1 << 20, &top_k) || top_k != floor(top_k);
        else
            bad = number(a, v, 0, 9007199254740992.0, &seed) || seed != floor(seed);
        if (bad) return usage("%s '%s': out of range or not a number (see --help)", a, v);
    }
    if (!ckpt) return usage("name the checkpoint with --ckpt DIR%s%s", "", "");
    if (!*prompt) return usage("--prompt is empty: give at least one character%s%s", "", "");

    /* One step directory, or the newest good one in a --ckpt-dir; either
     * format (single writer or sharded): each parameter read whole. */
    char manifest[4200];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", ckpt);
    struct stat st;
    sym_dckpt_t *ck = NULL;
    int rc = stat(manifest, &st) == 0 ? sym_dckpt_open(ckpt, &ck) : sym_dckpt_open_newest(ckpt, &ck);
    for (int i = 0; !rc && ck && i < sym_dckpt_num_files(ck); i++) rc = sym_dckpt_verify_file(ck, i);
    if (rc) {
        fprintf(stderr, "symtrain: sample: %s\n", sym_last_error());
        sym_dckpt_close(ck);
        return 1;
    }
    const sym_ckpt_meta_t *meta = sym_dckpt_meta(ck);
    sym_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = meta->seed;
    sym_model_t *m = NULL;
    if ((rc = sym_model_parse(meta->model, &cfg))) goto fail;
    if (cfg.kind != SYM_MODEL_GPT) {
        rc = SYM_EINVAL;
        fprintf(stderr, "symtrain: sample: %s holds a %s model; sampling needs a GPT\n",
                sym_dckpt_path(ck), meta->model);
        goto done;
    }
    if ((rc = sym_model_create(&cfg, 1, 0, &m))) goto fail;
    if (meta->params != sym_model_num_params(m)) {
        rc = SYM_ECORRUPT;
        fprintf(stderr, "symtrain: sample: %s holds %llu parameters, %s has %zu\n",
                sym_dckpt_path(ck), (unsigned long long)meta->params, cfg.spec,
                sym_model_num_params(m));
        goto done;
    }
    for (int i = 0; i < sym_model_num_tensors(m); i++) {
        const sym_param_t *p = sym_model_param(m, i);
        sym_ckpt_slice_t want = {0};
        snprintf(want.name, sizeof want.name, "%s", p->name);
        want.dtype = SYM_DT_F32;
        want.ndim = p->ndim;
        memcpy(want.shape, p->shape, sizeof want.shape);
        sym_ckpt_slice_whole(&want);
        want.data = sym_model_params(m) + p->offset;
        if ((rc = sym_dckpt_read(ck, &want))) goto fail;
    }
    size_t n = strlen(prompt);
    int32_t *tok = malloc((n + (size_t)max_new) * sizeof *tok);
    if (!tok) {
        rc = SYM_ENOMEM;
        fprintf(stderr, "symtrain: sample: out of memory\n");
        goto done;
    }
    for (size_t i = 0; i < n; i++) tok[i] = (unsigned char)prompt[i];
    fputs(prompt, stdout);
    rc = sym_model_generate(m, tok, (int)n, (int)max_new, (float)temperature, (int)top_k,
                            (uint64_t)seed, put_token, NULL);
    free(tok);
    fputc('\n', stdout);
    if (rc) goto fail;
    goto done;
fail:
    fprintf(stderr, "symtrain: sample: %s\n", sym_last_error());
done:
    sym_model_destroy(m);
    sym_dckpt_close(ck);
    return rc ? 1 : 0;
}
