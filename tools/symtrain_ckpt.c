/*
 * symtrain_ckpt.c — `symtrain ckpt show|verify DIR`: what a checkpoint holds,
 * and whether every byte of it is intact.
 *
 * DIR is one checkpoint (a directory with manifest.json) or a --ckpt-dir
 * (then every step-* checkpoint in it, newest first). Either format: sharded
 * (format 3, one file per PE) or single-writer (format 2, model.bin and
 * optim.bin).
 *
 *   show    step, position, model, layout, the tensors (dtype, global shape,
 *           slices, bytes) and the files (size, PE, CRC32C as recorded)
 *   verify  re-reads every file and checks its size and CRC32C, every slice's
 *           CRC32C, and that the slices tile every tensor exactly; exit 1
 *           naming the first damaged file of each damaged checkpoint
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <symtrain/symtrain.h>

#include "symtrain_cli.h"

static const char usage[] =
    "usage: symtrain ckpt show DIR     what a checkpoint holds (step, layout, tensors, files)\n"
    "       symtrain ckpt verify DIR   re-read every file: sizes, CRC32Cs, slices tiling\n"
    "                                  every tensor; exit 1 naming a damaged file\n"
    "DIR is a checkpoint (DIR/manifest.json) or a --ckpt-dir (each of its step-*).\n";

static void show(sym_dckpt_t *ck) {
    const sym_ckpt_meta_t *m = sym_dckpt_meta(ck);
    printf("%s: format %d, step %lld (%lld epoch%s + %lld samples), %s\n", sym_dckpt_path(ck),
           sym_dckpt_version(ck), (long long)m->step, (long long)m->epoch,
           m->epoch == 1 ? "" : "s", (long long)m->sample, sym_dckpt_layout(ck));
    printf("  model %s (%s), %llu parameters; %s, %llu steps; %s, global batch %d\n", m->model,
           m->activation, (unsigned long long)m->params, m->optimizer,
           (unsigned long long)m->optim_steps, m->dataset, m->global_batch);
    int nt = sym_dckpt_num_tensors(ck);
    unsigned long long total = 0;
    printf("  %d tensors:\n", nt);
    for (int i = 0; i < nt; i++) {
        sym_ckpt_slice_t t;
        int ns;
        sym_dckpt_tensor(ck, i, &t, &ns);
        char shape[96] = "";
        for (int d = 0; d < t.ndim; d++)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", d ? "x" : "",
                     (long long)t.shape[d]);
        unsigned long long bytes = (unsigned long long)sym_ckpt_slice_elems(&t) *
                                   sym_dtype_size(t.dtype);
        total += bytes;
        printf("    %-40s %-5s %-14s %3d slice%s %12llu bytes\n", t.name, sym_dtype_name(t.dtype),
               shape, ns, ns == 1 ? " " : "s", bytes);
    }
    int nf = sym_dckpt_num_files(ck);
    unsigned long long fbytes = 0;
    printf("  %d files:\n", nf);
    for (int i = 0; i < nf; i++) {
        const char *name;
        size_t size;
        uint32_t crc;
        int pe;
        sym_dckpt_file(ck, i, &name, &size, &crc, &pe);
        fbytes += size;
        if (pe >= 0)
            printf("    %-20s PE %-5d %12zu bytes  crc32c %08x\n", name, pe, size, crc);
        else
            printf("    %-20s %12zu bytes  crc32c %08x\n", name, size, crc);
    }
    printf("  %llu bytes of tensors in %llu bytes of files; CRC32Cs not checked (symtrain ckpt "
           "verify reads them)\n", total, fbytes);
}

/* 0: intact; 1: damaged or unreadable (said on stderr). */
static int verify(sym_dckpt_t *ck) {
    int nf = sym_dckpt_num_files(ck), rc = 0;
    for (int i = 0; i < nf && !rc; i++) rc = sym_dckpt_verify_file(ck, i);
    if (!rc) rc = sym_dckpt_verify_slices(ck);
    if (rc) {
        fprintf(stderr, "symtrain: ckpt verify: %s\n", sym_last_error());
        fprintf(stderr, "symtrain: ckpt verify: %s is not usable: restore the file named from a "
                "copy, or remove the checkpoint (a --resume then takes the one before it)\n",
                sym_dckpt_path(ck));
        return 1;
    }
    printf("%s: ok: step %lld, %d files, %d tensors: every CRC32C matches and the slices tile "
           "every tensor\n", sym_dckpt_path(ck), (long long)sym_dckpt_meta(ck)->step, nf,
           sym_dckpt_num_tensors(ck));
    return 0;
}

static int one(const char *path, int do_verify) {
    sym_dckpt_t *ck;
    if (sym_dckpt_open(path, &ck)) {
        fprintf(stderr, "symtrain: ckpt %s: %s\n", do_verify ? "verify" : "show", sym_last_error());
        return 1;
    }
    int rc = 0;
    if (do_verify)
        rc = verify(ck);
    else
        show(ck);
    sym_dckpt_close(ck);
    return rc;
}

static int by_step_desc(const void *a, const void *b) {
    return strcmp(*(char *const *)b, *(char *const *)a); /* step-NNNNNNNN: by name = by step */
}

int sym_cli_ckpt(int argc, char **argv) {
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc != 2 || (strcmp(argv[0], "show") && strcmp(argv[0], "verify"))) {
        fprintf(stderr, "symtrain: ckpt: %s\n%s",
                argc < 1 ? "say what to do: show or verify" : argc < 2 ? "name the checkpoint directory"
                                                                       : "expected show|verify DIR",
                usage);
        return 2;
    }
    int do_verify = !strcmp(argv[0], "verify");
    const char *dir = argv[1];
    char mpath[4200];
    struct stat st;
    snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
    if (stat(mpath, &st) == 0) return one(dir, do_verify);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "symtrain: ckpt: cannot open %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "step-", 5)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nn = realloc(names, sizeof *names * (size_t)cap);
            if (!nn) break;
            names = nn;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (!n) {
        fprintf(stderr, "symtrain: ckpt: %s is neither a checkpoint (no manifest.json) nor a "
                "directory of them (no step-*)\n", dir);
        free(names);
        return 1;
    }
    qsort(names, (size_t)n, sizeof *names, by_step_desc);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc |= one(path, do_verify);
        free(names[i]);
    }
    free(names);
    return rc;
}
