/*
 * shm.c — symmetric memory shared between the PEs of one host.
 *
 * Each PE puts its two segments on anonymous memory files (memfd):
 *   - the symmetric heap, mapped at an address aligned to its largest block so
 *     that buddy blocks are naturally aligned;
 *   - the program's global and static data (.data and .bss of the executable):
 *     the pages are copied onto a memory file and that file is mapped over the
 *     original range, so the variables stay where the program expects them and
 *     other PEs can map the same pages. This is what makes globals valid RMA
 *     targets, as the standard requires.
 * Peers open the files through /proc/<pid>/fd (or pidfd_getfd) and map them.
 * A memory file has no name in /dev/shm: when the last process holding it
 * ends, however it ends (SIGKILL included), the memory is gone. The files are
 * mode 0600 and /proc only lets the same user open another process's files.
 *
 * Programs that fork() after shmem_init() share their global data with the
 * child; exec() (system, popen, posix_spawn) is unaffected.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport.h"

static int seg_fd[SYM_SEG_COUNT] = {-1, -1};
static size_t page_size;

static int make_memfd(const char *name, size_t size) {
    int fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC);
    if (fd < 0)
        sym__fatal("shmem_init", "memfd_create failed (%s); symshmem needs Linux 3.17 or later",
                   strerror(errno));
    SYM_CHECK_SYS(fchmod(fd, 0600));
    if (ftruncate(fd, (off_t)size) < 0) {
        char b[32];
        sym__fatal("shmem_init", "cannot size the %s segment to %s (%s)", name,
                   sym__fmt_size(size, b, sizeof b), strerror(errno));
    }
    return fd;
}

/* ---- the heap ---- */

/* Map the heap so that base + align_off is a multiple of align. */
static void create_heap(size_t size, size_t align, size_t align_off) {
    int fd = make_memfd("symtrain-heap", size);
    size_t span = size + align + align_off;
    char *r = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) {
        char b[32];
        sym__fatal("shmem_init",
                   "cannot reserve %s of address space for the symmetric heap (%s); lower "
                   "SYMTRAIN_SYMMETRIC_SIZE",
                   sym__fmt_size(span, b, sizeof b), strerror(errno));
    }
    char *base = (char *)SYM_ALIGN_UP((uintptr_t)r + align_off, align) - align_off;
    if (mmap(base, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
        sym__sys_fail(__FILE__, __LINE__, "mmap(heap)");
    if (base > r) munmap(r, (size_t)(base - r));
    if (r + span > base + size) munmap(base + size, (size_t)(r + span - (base + size)));
    seg_fd[SYM_SEG_HEAP] = fd;
    sym__world.seg[SYM_SEG_HEAP].base = base;
    sym__world.seg[SYM_SEG_HEAP].size = size;
}

/* ---- global and static data ---- */

typedef struct {
    uintptr_t lo, hi;
} range_t;

/* The first object dl_iterate_phdr reports is the executable. Its writable
 * PT_LOAD holds .data and .bss; the part covered by PT_GNU_RELRO becomes
 * read-only after relocation and holds no program variables, so it is skipped. */
static int find_data(struct dl_phdr_info *info, size_t sz, void *arg) {
    (void)sz;
    range_t *r = arg;
    uintptr_t relro_end = 0, lo = 0, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO) relro_end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
            lo = info->dlpi_addr + ph->p_vaddr;
            hi = lo + ph->p_memsz;
        }
    }
    lo &= ~(uintptr_t)(page_size - 1);
    if (relro_end > lo) lo = SYM_ALIGN_UP(relro_end, page_size);
    hi = SYM_ALIGN_UP(hi, page_size);
    r->lo = lo;
    r->hi = hi > lo ? hi : lo;
    return 1; /* stop after the executable */
}

/* Write [p, p + n) to the start of file fd. The range is all of the
 * program's data, the gaps between its variables included: AddressSanitizer
 * keeps its redzones there, and its memcpy (or write) would report reading
 * them. The kernel's copy (the raw system call, which no sanitizer wraps)
 * reads the bytes without judging them. */
static void copy_to_file(int fd, const char *p, size_t n) {
    for (size_t done = 0; done < n;) {
        long w = syscall(SYS_pwrite64, fd, p + done, n - done, (off_t)done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) sym__sys_fail(__FILE__, __LINE__, "pwrite(data copy)");
        done += (size_t)w;
    }
}

static void share_data(void) {
    range_t r = {0, 0};
    dl_iterate_phdr(find_data, &r);
    size_t size = r.hi - r.lo;
    sym__world.seg[SYM_SEG_DATA].base = (char *)r.lo;
    sym__world.seg[SYM_SEG_DATA].size = size;
    if (!size) return;
    int fd = make_memfd("symtrain-data", size);
    /* From here to the remap nothing may write a global: the copy would lose it. */
    copy_to_file(fd, (const char *)r.lo, size);
    if (mmap((void *)r.lo, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED)
        sym__sys_fail(__FILE__, __LINE__, "mmap(data)");
    seg_fd[SYM_SEG_DATA] = fd;
}

void sym__shm_create_segments(size_t heap_size, size_t heap_align, size_t align_off) {
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    if (heap_align < page_size) heap_align = page_size;
    create_heap(heap_size, heap_align, align_off);
    share_data();
}

void sym__shm_handle(sym_shm_handle_t *h) {
    h->pid = (int32_t)getpid();
    for (int s = 0; s < SYM_SEG_COUNT; s++) h->fd[s] = seg_fd[s];
}

/* ---- peers ---- */

static int open_peer_fd(int32_t pid, int32_t fd) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, (int)fd);
    int f = open(path, O_RDWR | O_CLOEXEC);
    if (f >= 0) return f;
    int saved = errno;
#ifdef SYS_pidfd_getfd
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd >= 0) {
        f = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
        close(pidfd);
        if (f >= 0) return f;
    }
#endif
    errno = saved;
    return -1;
}

void sym__shm_map_peer(int pe, const sym_shm_handle_t *h) {
    sym_peer_t *p = &sym__world.peer[pe];
    for (int s = 0; s < SYM_SEG_COUNT; s++) {
        size_t size = sym__world.seg[s].size;
        if (!size) {
            p->seg[s] = sym__world.seg[s].base;
            continue;
        }
        int f = open_peer_fd(h->pid, h->fd[s]);
        if (f < 0)
            sym__fatal("shmem_init",
                       "cannot open the symmetric memory of PE %d (pid %d): %s; PEs on one "
                       "host must run as the same user and see each other's /proc",
                       pe, (int)h->pid, strerror(errno));
        struct stat st;
        if (fstat(f, &st) < 0 || (size_t)st.st_size != size)
            sym__fatal("shmem_init",
                       "PE %d's %s segment is %lld bytes, ours %zu: the PEs run different "
                       "programs or different SYMTRAIN_SYMMETRIC_SIZE settings",
                       pe, s == SYM_SEG_HEAP ? "heap" : "data", (long long)st.st_size, size);
        char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
        close(f);
        if (m == MAP_FAILED)
            sym__fatal("shmem_init", "cannot map PE %d's symmetric memory (%s)", pe,
                       strerror(errno));
        p->seg[s] = m;
    }
}

void sym__shm_close_handles(void) {
    for (int s = 0; s < SYM_SEG_COUNT; s++) {
        if (seg_fd[s] >= 0) close(seg_fd[s]);
        seg_fd[s] = -1;
    }
}

void sym__shm_unmap_all(void) {
    for (int pe = 0; pe < sym__world.npes; pe++) {
        sym_peer_t *p = &sym__world.peer[pe];
        if (pe == sym__world.me) continue;
        for (int s = 0; s < SYM_SEG_COUNT; s++)
            if (p->seg[s] && sym__world.seg[s].size) munmap(p->seg[s], sym__world.seg[s].size);
    }
    /* Our own heap stays mapped: the program may still read it after finalize,
     * and the data segment must stay where the program's variables are. */
}
