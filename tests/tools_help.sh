#!/usr/bin/env bash
# tools_help.sh — `--help` is a request, not a mistake: symrun, symbench and
# symtrain print their usage on stdout and exit 0, and list every environment
# variable the code under src/ reads (so a new variable must be documented).
# Usage errors still go to stderr with exit status 2.
#   tools_help.sh SYMRUN SYMBENCH SOURCE_DIR [SYMTRAIN]
set -u
symrun=$1 symbench=$2 src=$3 symtrain=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run NAME CMD...: RC, $tmp/out, $tmp/err
run() {
    name=$1
    shift
    timeout -k 2 60 "$@" >"$tmp/out" 2>"$tmp/err"
    RC=$?
}
show() { sed 's/^/  stdout: /' "$tmp/out" | head -5; sed 's/^/  stderr: /' "$tmp/err" | head -5; }
# wants_help NAME USAGE_REGEX: exit 0, usage on stdout once, stderr empty
wants_help() {
    [ "$RC" -eq 0 ] || { fail "$name: exit status $RC, want 0"; show; }
    [ "$(grep -cE "$2" "$tmp/out")" -eq 1 ] || { fail "$name: stdout has not one /$2/ line"; show; }
    [ ! -s "$tmp/err" ] || { fail "$name: wrote to stderr"; show; }
}
# wants_usage_error NAME REGEX: exit 2, REGEX on stderr, stdout empty
wants_usage_error() {
    [ "$RC" -eq 2 ] || { fail "$name: exit status $RC, want 2"; show; }
    grep -qE -- "$2" "$tmp/err" || { fail "$name: stderr lacks /$2/"; show; }
    [ ! -s "$tmp/out" ] || { fail "$name: wrote to stdout"; show; }
}

# The variables read under the given directories: names passed to getenv and
# the runtime's env helpers, and every quoted SYMTRAIN_* / SHMEM_* name (lists
# such as the heap-size names). Test hooks (SYMTRAIN_TEST_*) are not documented.
vars_read() {
    { grep -rhoE '"(SYMTRAIN|SHMEM)_[A-Z0-9_]+"' "$@"
      grep -rhoE '(getenv|sym__env_[a-z]+|env_set|need)\("[A-Z0-9_]+"' "$@" | grep -oE '"[A-Z0-9_]+"'
    } | tr -d '"' | grep -v '^SYMTRAIN_TEST_' | sort -u
}
# lists_vars NAME VAR...: each variable named in $tmp/out
lists_vars() {
    local name=$1 missing=""
    shift
    for v in "$@"; do grep -qw -- "$v" "$tmp/out" || missing="$missing $v"; done
    [ -z "$missing" ] || fail "$name: --help does not list$missing"
}
all_vars=$(vars_read "$src/src")
runtime_vars=$(vars_read "$src/src" --exclude-dir=train)
[ "$(echo "$all_vars" | wc -w)" -ge 30 ] || fail "found only $(echo "$all_vars" | wc -w) variables in $src/src"

for h in --help -h; do
    run "symrun $h" "$symrun" "$h"
    wants_help "$name" '^usage: symrun -n N'
    lists_vars "$name" $all_vars
done
run "symbench --help" "$symbench" --help
wants_help "$name" '^usage: symrun -n 2 symbench TEST'
lists_vars "$name" $runtime_vars
run "symrun -n 2 symbench --help" "$symrun" -n 2 "$symbench" --help
wants_help "$name" '^usage: symrun -n 2 symbench TEST' # PE 0 alone speaks
run "symbench put --help" "$symbench" put --help
wants_help "$name" '^usage: symrun -n 2 symbench TEST'
for c in allreduce broadcast; do
    run "symbench $c --help" "$symrun" -n 2 "$symbench" "$c" --help
    wants_help "$name" '^usage: symrun -n N symbench allreduce\|'
    lists_vars "$name" $runtime_vars
done

if [ -n "$symtrain" ]; then # symtrain too: the whole text, and train's own --help
    for h in --help -h; do
        run "symtrain $h" "$symtrain" "$h"
        wants_help "$name" '^usage: symtrain train'
        lists_vars "$name" $all_vars
    done
    run "symrun -n 2 symtrain train --help" "$symrun" -n 2 "$symtrain" train --help
    wants_help "$name" '^usage: symtrain train' # PE 0 alone speaks
    lists_vars "$name" $all_vars
    # one option splits a step into micro-batches, with or without a pipeline
    grep -qE '^  --micro-batches M .*micro-' "$tmp/out" || fail "$name: no --micro-batches"
    ! grep -qE '^  --accum' "$tmp/out" || fail "$name: still lists --accum"
    run "symtrain train --accum 4" "$symtrain" train --accum 4
    wants_usage_error "$name" "--accum is now --micro-batches 4"
fi

run "symrun --frobnicate" "$symrun" --frobnicate
wants_usage_error "$name" "unknown option '--frobnicate'"
grep -q '^usage: symrun -n N' "$tmp/err" || fail "$name: no usage on stderr"
run "symrun without -n" "$symrun" "$symbench"
wants_usage_error "$name" "give the number of PEs"
run "symbench frobnicate" "$symbench" frobnicate
wants_usage_error "$name" "unknown test 'frobnicate'"
run "symbench put --frobnicate" "$symbench" put --frobnicate 1
wants_usage_error "$name" "unknown option '--frobnicate'"
run "symbench allreduce -t frobnicate" "$symbench" allreduce -t frobnicate
wants_usage_error "$name" "unknown type"

if [ "$fails" -ne 0 ]; then
    echo "tools_help: FAIL ($fails)"
    exit 1
fi
echo "tools_help: PASS ($(echo "$all_vars" | wc -w) variables listed)"
