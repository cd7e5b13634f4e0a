#!/usr/bin/env bash
# tools_install.sh — what an outside user does: install symshmem to a fresh
# prefix, then build an OpenSHMEM program with symcc, with pkg-config and with
# CMake's find_package, and run each under the installed symrun.
#   tools_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
run() { # run NAME EXE: it must print the right counter on 3 PEs
    out=$("$prefix/bin/symrun" -n 3 --timeout 60 "$2")
    echo "$out" | grep -q "counter = 6 (expected 6)" || { echo "FAIL $1: $out"; exit 1; }
    ! echo "$out" | grep -q WRONG || { echo "FAIL $1: $out"; exit 1; }
    echo "ok   $1"
}

"$prefix/bin/symcc" -showme prog.c -o prog | grep -q -- "-lsymshmem" || { echo "FAIL symcc -showme"; exit 1; }
"$prefix/bin/symcc" -showme -c prog.c | grep -vq -- "-lsymshmem" || { echo "FAIL symcc -showme -c links"; exit 1; }
echo "ok   symcc -showme"

"$prefix/bin/symcc" -Wall -Wextra -Werror "$src/examples/hello_pe.c" -o "$tmp/hello_symcc"
run "symcc" "$tmp/hello_symcc"

if command -v pkg-config >/dev/null; then
    flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs symshmem)
    cc -std=c11 "$src/examples/hello_pe.c" -o "$tmp/hello_pc" $flags
    run "pkg-config" "$tmp/hello_pc"
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
