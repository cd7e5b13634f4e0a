/*
 * tools_version — the version macros come from the project version (CMake's,
 * passed here as WANT_VERSION), the version functions return them, and the
 * error codes of the libraries do not collide: a code names its library.
 *
 *   tools_version            (no PEs; built with -DWANT_VERSION="x.y.z", and
 *                             -DHAVE_TRAIN=1 when the training stack is built)
 */
#include <shmemx.h>
#include <stdio.h>
#include <string.h>

#include "test.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

#ifdef HAVE_TRAIN
#include <symtrain/symtrain.h>
#endif

/* Every code of one map, and its message. */
typedef struct {
    const char *name;
    int code;
    const char *msg;
} code_t;
#define CODE(prefix, name, code, msg) {#prefix #name, code, msg},
#define SHMEMX_CODE(name, code, msg) CODE(SHMEMX_, name, code, msg)
static const code_t shmemx_codes[] = {SHMEMX_ERRNO_MAP(SHMEMX_CODE)};
#ifdef HAVE_TRAIN
#define SYM_CODE(name, code, msg) CODE(SYM_, name, code, msg)
static const code_t sym_codes[] = {SYM_ERRNO_MAP(SYM_CODE)};
#endif

int main(void) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", SHMEMX_VERSION_MAJOR, SHMEMX_VERSION_MINOR,
             SHMEMX_VERSION_PATCH);
    CHECK(!strcmp(want, WANT_VERSION), "SHMEMX_VERSION_* say %s, the project %s", want,
          WANT_VERSION);
    CHECK(!strcmp(SHMEMX_VERSION_STRING, WANT_VERSION), "SHMEMX_VERSION_STRING %s",
          SHMEMX_VERSION_STRING);
    CHECK(shmemx_version() == SHMEMX_VERSION_HEX, "shmemx_version() %#x, the header %#x",
          shmemx_version(), SHMEMX_VERSION_HEX);
    CHECK(SHMEMX_VERSION_HEX == ((SHMEMX_VERSION_MAJOR << 16) | (SHMEMX_VERSION_MINOR << 8) |
                                 SHMEMX_VERSION_PATCH),
          "SHMEMX_VERSION_HEX %#x", SHMEMX_VERSION_HEX);
    CHECK(!strcmp(shmemx_version_string(), WANT_VERSION), "shmemx_version_string() %s",
          shmemx_version_string());

    /* shmemx codes: -100 .. -199, each with its own message */
    for (size_t i = 0; i < N_OF(shmemx_codes); i++) {
        const code_t *c = &shmemx_codes[i];
        CHECK(c->code <= -100 && c->code > -200, "%s is %d, outside -100 .. -199", c->name,
              c->code);
        CHECK(!strcmp(shmemx_strerror(c->code), c->msg), "shmemx_strerror(%s) is '%s'", c->name,
              shmemx_strerror(c->code));
    }
    CHECK(!strcmp(shmemx_strerror(-3), "unknown error"), "shmemx_strerror(-3) is '%s'",
          shmemx_strerror(-3));

#ifdef HAVE_TRAIN
    snprintf(want, sizeof want, "%d.%d.%d", SYMTRAIN_VERSION_MAJOR, SYMTRAIN_VERSION_MINOR,
             SYMTRAIN_VERSION_PATCH);
    CHECK(!strcmp(want, WANT_VERSION), "SYMTRAIN_VERSION_* say %s, the project %s", want,
          WANT_VERSION);
    CHECK(sym_version() == SYMTRAIN_VERSION_HEX, "sym_version() %#x, the header %#x",
          sym_version(), SYMTRAIN_VERSION_HEX);
    CHECK(!strcmp(sym_version_string(), SYMTRAIN_VERSION_STRING), "sym_version_string() %s",
          sym_version_string());
    /* no code means two things: SYM_ENOENT and SHMEMX_ETEAM were both -3 */
    for (size_t i = 0; i < N_OF(sym_codes); i++)
        for (size_t k = 0; k < N_OF(shmemx_codes); k++)
            CHECK(sym_codes[i].code != shmemx_codes[k].code, "%s and %s are both %d",
                  sym_codes[i].name, shmemx_codes[k].name, sym_codes[i].code);
    CHECK(!strcmp(sym_strerror(SHMEMX_ETEAM), "unknown error"), "sym_strerror(SHMEMX_ETEAM) is '%s'",
          sym_strerror(SHMEMX_ETEAM));
#endif
    printf("tools_version: PASS (%s)\n", WANT_VERSION);
    return 0;
}
