/*
 * version.c — the training library's version (see symtrain/symtrain.h): the
 * SYMTRAIN_VERSION_* of the build, which CMake generates from the project
 * version (symtrain/version.h).
 */
#include <symtrain/symtrain.h>

unsigned sym_version(void) { return SYMTRAIN_VERSION_HEX; }

const char *sym_version_string(void) { return SYMTRAIN_VERSION_STRING; }
