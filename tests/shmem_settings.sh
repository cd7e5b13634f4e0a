#!/bin/bash
# shmem_settings.sh — a bad setting is an error that names it, on every path:
#
#   shmem_settings.sh SYMRUN CHILD NPES
#
# Each case starts a real job (symrun -n NPES CHILD ok) with one malformed or
# out-of-range environment setting, on one host (where the fabric's settings
# are not used, and were once not checked either): the job must fail at once,
# nonzero, every line that names the variable saying the same thing (what it
# takes), and nothing may be left behind. Then the same values that are good
# run.
set -u
NAME=shmem_settings
SYMRUN=$1
CHILD=$2
N=$3
. "$(dirname "$0")/shmem_lib.sh"
echo "$NAME: $N PEs, symrun $SYMRUN"

# bad_env VAR VALUE REGEX: the job fails within seconds; stderr says REGEX
# (and, on every line naming VAR, one and the same message).
bad_env() {
    local var=$1 value=$2 re=$3
    export "$var=$value"
    run_case "$var='$value'" nonzero 10 -n "$N" "$CHILD" ok "$TOKEN"
    unset "$var"
    expect_err "$var='$value' $re"
    local kinds
    kinds=$(grep -F "$var=" "$ERR" | sed 's/^[^:]*: PE [0-9]*: //' | sort -u | wc -l)
    [ "$kinds" -eq 1 ] || fail "$var: $kinds different messages name it"
    expect_out "ok$" 0
}

bad_env SYMTRAIN_WAIT spin "is not one of auto, poll or sleep; unset, it is auto"
bad_env SYMTRAIN_OFI_ATOMICS native "is not one of auto, fabric or am"
bad_env SYMTRAIN_HOST_SIZE -5 "is not a whole number from 0 to 2147483647"
bad_env SYMTRAIN_HOST_SIZE 2x "is not a whole number"
bad_env SYMTRAIN_COPY_NT_MIN lots "is not a size"
bad_env SYMTRAIN_COPY_NT_MIN -1 "is not a size"
bad_env SYMTRAIN_VERBOSE yes "is not one of 0 or 1"
bad_env SYMTRAIN_BOOTSTRAP mpi "is not one of symrun, pmix, env or single"
bad_env SYMTRAIN_SYMMETRIC_SIZE -5 "is not a size"
if [ -n "$(ldconfig -p 2>/dev/null | grep libfabric.so.1)" ]; then
    bad_env SYMTRAIN_OFI_PROVIDER bogus-$$ "is not a libfabric provider .* name one that fi_info lists"
else
    echo "$NAME: SKIP SYMTRAIN_OFI_PROVIDER=bogus (libfabric is not installed)"
fi

# The env bootstrap's timeout (a one-PE job started the torchrun way, under
# symrun): -1 once became 120 s, inf and nan meant none.
for t in -1 0 inf nan 1e3; do
    export SYMTRAIN_BOOTSTRAP=env RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
        MASTER_PORT=$((20000 + RANDOM % 20000)) SYMTRAIN_JOB_TOKEN=$TOKEN SYMTRAIN_BOOT_TIMEOUT=$t
    run_case "SYMTRAIN_BOOT_TIMEOUT='$t'" nonzero 10 -n 1 "$CHILD" ok "$TOKEN"
    unset SYMTRAIN_BOOTSTRAP RANK WORLD_SIZE MASTER_ADDR MASTER_PORT SYMTRAIN_JOB_TOKEN SYMTRAIN_BOOT_TIMEOUT
    expect_err "SYMTRAIN_BOOT_TIMEOUT='$t' is not a duration: write a number of seconds above 0" 1
done

# Good values of the same settings run.
export SYMTRAIN_WAIT=sleep SYMTRAIN_OFI_ATOMICS=am SYMTRAIN_HOST_SIZE=0 SYMTRAIN_COPY_NT_MIN=64K \
    SYMTRAIN_VERBOSE=0 SYMTRAIN_BOOTSTRAP=symrun
run_case good 0 10 -n "$N" "$CHILD" ok "$TOKEN"
expect_out "^PE [0-9]+ of $N: ok$" "$N"
unset SYMTRAIN_WAIT SYMTRAIN_OFI_ATOMICS SYMTRAIN_HOST_SIZE SYMTRAIN_COPY_NT_MIN SYMTRAIN_VERBOSE \
    SYMTRAIN_BOOTSTRAP
export SYMTRAIN_BOOTSTRAP=env RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=$((20000 + RANDOM % 20000)) SYMTRAIN_JOB_TOKEN=$TOKEN SYMTRAIN_BOOT_TIMEOUT=2.5
run_case "SYMTRAIN_BOOT_TIMEOUT=2.5" 0 10 -n 1 "$CHILD" ok "$TOKEN"
unset SYMTRAIN_BOOTSTRAP RANK WORLD_SIZE MASTER_ADDR MASTER_PORT SYMTRAIN_JOB_TOKEN SYMTRAIN_BOOT_TIMEOUT
expect_out "^PE 0 of 1: ok$" 1

finish
