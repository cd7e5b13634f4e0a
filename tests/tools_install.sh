#!/usr/bin/env bash
# tools_install.sh — what an outside user does: install symtrain to a prefix
# the build was not configured for, move the installed tree, then run the
# installed programs and build programs against it with symcc, pkg-config and
# CMake's find_package.
#   tools_install.sh BUILD_DIR SOURCE_DIR HAVE_TRAIN
#
# BUILD_DIR was configured with its own CMAKE_INSTALL_PREFIX (/usr/local by
# default); `make install PREFIX=...` and `cmake --install --prefix` put the
# files elsewhere, and a tree may be moved after it is installed. The installed
# programs and libraries must find each other wherever they lie (a relative
# RPATH, $ORIGIN/../lib), with no LD_LIBRARY_PATH. HAVE_TRAIN (1 or 0: was the
# training stack built?) says whether bin/symtrain and symtrain.pc must exist.
set -eu
build=$1 src=$2 have_train=${3:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH
fail() { echo "FAIL $*"; exit 1; }

configured=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
staged=$tmp/staged
cmake --install "$build" --prefix "$staged" >/dev/null
prefix=$tmp/moved/prefix
mkdir -p "$tmp/moved"
mv "$staged" "$prefix"
[ "$configured" != "$staged" ] && [ "$configured" != "$prefix" ] ||
    fail "the build is configured for the test's own prefix ($configured)"
echo "ok   installed to $staged (configured for $configured), moved to $prefix"

# Every installed program and library finds what it links (our libraries
# through the relative RPATH; others where the build found them).
for f in "$prefix"/bin/* "$prefix"/lib/*.so*; do
    [ -L "$f" ] && continue
    head -c 4 "$f" | grep -q ELF || continue
    missing=$(ldd "$f" 2>&1 | grep 'not found' || true)
    [ -z "$missing" ] || fail "$f: $missing"
    rpath=$(readelf -d "$f" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
    case ":$rpath:" in *":$configured/$libdir:"*) fail "$f: RPATH $rpath names the configured prefix" ;; esac
done
echo "ok   ldd: every installed program and library finds its libraries"
# libsymutil is private: installed for the libraries, with no link name
[ ! -e "$prefix/lib/libsymutil.so" ] || fail "lib/libsymutil.so installed: programs could link it"
ls "$prefix"/lib/libsymutil.so.0 >/dev/null || fail "lib/libsymutil.so.0 not installed"

run() { # run NAME EXE: it must print the right counter on 3 PEs
    out=$("$prefix/bin/symrun" -n 3 --timeout 60 "$2")
    echo "$out" | grep -q "counter = 6 (expected 6)" || fail "$1: $out"
    ! echo "$out" | grep -q WRONG || fail "$1: $out"
    echo "ok   $1"
}

# The installed tools themselves, from the moved tree.
out=$("$prefix/bin/symrun" -n 2 --timeout 60 "$prefix/bin/symbench" barrier --iters 20 --reps 1 2>&1) ||
    fail "installed symrun -n 2 symbench barrier: $out"
echo "$out" | grep -q '^# symbench barrier latency' || fail "installed symbench: $out"
echo "ok   installed symrun -n 2 symbench barrier"
if [ "$have_train" = 1 ]; then
    out=$("$prefix/bin/symrun" -n 2 --timeout 60 "$prefix/bin/symtrain" train --help 2>&1) ||
        fail "installed symrun -n 2 symtrain train --help: $out"
    echo "$out" | grep -q '^usage: symtrain train' || fail "installed symtrain train --help: $out"
    echo "ok   installed symrun -n 2 symtrain train --help"
fi

"$prefix/bin/symcc" -showme prog.c -o prog | grep -q -- "-lsymshmem" || fail "symcc -showme"
"$prefix/bin/symcc" -showme -c prog.c | grep -vq -- "-lsymshmem" || fail "symcc -showme -c links"
echo "ok   symcc -showme"

"$prefix/bin/symcc" -Wall -Wextra -Werror "$src/examples/hello_pe.c" -o "$tmp/hello_symcc"
run "symcc" "$tmp/hello_symcc"

if command -v pkg-config >/dev/null; then
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    flags=$(pkg-config --cflags --libs symshmem)
    cc -std=c11 "$src/examples/hello_pe.c" -o "$tmp/hello_pc" $flags
    run "pkg-config symshmem" "$tmp/hello_pc"
    if [ "$have_train" = 1 ]; then
        flags=$(pkg-config --cflags --libs symtrain) || fail "pkg-config symtrain"
        cat >"$tmp/train_pc.c" <<'C'
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <string.h>
#include <symtrain/symtrain.h>
int main(void) {
    shmem_init(); /* libsymtrain sits on libsymshmem: both link */
    const char *s = sym_strerror(SYM_ENOMEM);
    printf("PE %d: version %s/%s: %s\n", shmem_my_pe(), sym_version_string(),
           shmemx_version_string(), s);
    int ok = sym_version() == SYMTRAIN_VERSION_HEX && shmemx_version() == SHMEMX_VERSION_HEX;
    shmem_finalize();
    return strcmp(s, "out of memory") != 0 || !ok;
}
C
        cc -std=c11 -Wall -Werror "$tmp/train_pc.c" -o "$tmp/train_pc" $flags
        out=$("$prefix/bin/symrun" -n 2 --timeout 60 "$tmp/train_pc") || fail "pkg-config symtrain program: $out"
        [ "$(echo "$out" | grep -c ': out of memory$')" = 2 ] || fail "pkg-config symtrain program: $out"
        echo "ok   pkg-config symtrain"
    fi
    unset PKG_CONFIG_PATH
else
    echo "SKIP pkg-config checks: pkg-config is not installed"
fi

mkdir "$tmp/proj"
cp "$src/examples/hello_pe.c" "$tmp/proj/"
cat >"$tmp/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(outside C)
find_package(symshmem REQUIRED)
add_executable(hello hello_pe.c)
target_link_libraries(hello symshmem::symshmem)
CM
cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/proj/build" >/dev/null
run "find_package" "$tmp/proj/build/hello"
echo "tools_install: passed"
