#!/usr/bin/env bash
# tools_exports.sh — the public libraries export their public API and nothing
# else: no sym__* or sym_buddy_* (the private names shared between files of
# src/), and every exported name is one the public headers own.
#   tools_exports.sh LIBRARY...   (libsymshmem, libsymtrain, libsymgpu as built)
set -u
fails=0
for lib in "$@"; do
    name=$(basename "$lib")
    before=$fails
    syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
    n=$(echo "$syms" | grep -c .)
    case "$name" in
    libsymshmem*) allowed='^(shmem_|shmemx_|symi_)|^(start_pes|_my_pe|_num_pes|shmalloc|shfree|shrealloc|shmemalign)$' ;;
    libsymtrain*) allowed='^sym_[^_]' ;;
    libsymgpu*) allowed='^shmemx_gpu_' ;;
    *) echo "FAIL $name: not a public library this test knows"; fails=$((fails + 1)); continue ;;
    esac
    private=$(echo "$syms" | grep -E '^(sym__|sym_buddy_)' | head -5 | tr '\n' ' ')
    [ -z "$private" ] || { echo "FAIL $name exports internal names: $private..."; fails=$((fails + 1)); }
    other=$(echo "$syms" | grep -vE "$allowed" | head -5 | tr '\n' ' ')
    [ -z "$other" ] || { echo "FAIL $name exports names outside its API: $other..."; fails=$((fails + 1)); }
    [ "$n" -ge 10 ] || { echo "FAIL $name exports only $n names"; fails=$((fails + 1)); }
    [ "$fails" != "$before" ] || echo "ok   $name: $n names, all public"
done
[ "$fails" = 0 ] || { echo "tools_exports: FAIL ($fails)"; exit 1; }
echo "tools_exports: PASS"
