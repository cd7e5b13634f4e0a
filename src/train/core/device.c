/*
 * device.c — finding the GPU half of the training stack (see device.h):
 * libsymtrain_cuda is loaded with dlopen from the folder libsymtrain itself
 * was loaded from (or SYMTRAIN_CUDA_BACKEND), once, on the first call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "internal.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const struct sym_cuda_backend *table;
static char reason[8400];

/* DIR/libsymtrain_cuda.so, DIR being where this library lives. */
static int module_path(char *buf, size_t len) {
    const char *env = getenv("SYMTRAIN_CUDA_BACKEND");
    if (env && *env) return snprintf(buf, len, "%s", env) < (int)len ? 0 : -1;
    Dl_info info;
    if (!dladdr((void *)module_path, &info) || !info.dli_fname) return -1;
    const char *slash = strrchr(info.dli_fname, '/');
    int dirlen = slash ? (int)(slash - info.dli_fname) : 1;
    const char *dir = slash ? info.dli_fname : ".";
    return snprintf(buf, len, "%.*s/%s", dirlen, dir, SYM_CUDA_BACKEND_FILE) < (int)len ? 0 : -1;
}

static void load(void) {
    char path[4096];
    if (module_path(path, sizeof path)) {
        snprintf(reason, sizeof reason, "cannot locate %s next to libsymtrain; set "
                 "SYMTRAIN_CUDA_BACKEND to its path", SYM_CUDA_BACKEND_FILE);
        return;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(reason, sizeof reason,
                 "the GPU part of symtrain is not available: %s (it is built where CMake "
                 "finds nvcc and NVSHMEM, and needs the CUDA runtime and cuBLASLt)",
                 why ? why : path);
        return;
    }
    sym_cuda_backend_fn get = (sym_cuda_backend_fn)dlsym(h, SYM_CUDA_BACKEND_SYMBOL);
    const struct sym_cuda_backend *t = get ? get() : NULL;
    if (!t || t->abi != SYM_CUDA_BACKEND_ABI) {
        snprintf(reason, sizeof reason, "%s is not a symtrain CUDA backend of ABI %d (a stale "
                 "build?); rebuild symtrain", path, SYM_CUDA_BACKEND_ABI);
        dlclose(h);
        return;
    }
    table = t; /* kept loaded for the process's life */
}

const struct sym_cuda_backend *sym__cuda_backend(void) {
    pthread_once(&once, load);
    if (!table) sym__error(SYM_ENOENT, "%s", reason);
    return table;
}
