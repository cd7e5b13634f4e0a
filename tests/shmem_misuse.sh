#!/bin/bash
# shmem_misuse.sh — misuse of the API ends the job with one message:
#
#   shmem_misuse.sh SYMRUN CHILD NPES
#
# A call before shmem_init or after shmem_finalize, a PE out of range, an
# address that is not symmetric (stack, private heap, a range past the end of
# the heap), a strided range whose extent overflows 64 bits, a misaligned
# atomic, a bad comparison or signal operation, freeing memory that
# shmem_malloc did not return, malformed sizes in the environment. The last PE
# misuses the API while the others wait in a barrier: symrun must exit
# non-zero within seconds, and stderr must hold exactly one runtime line,
# "<program>: PE <n>: <call>: <cause>", named after the program (CHILD), not
# "symtrain".
set -u
NAME=shmem_misuse
SYMRUN=$1
CHILD=$2
N=$3
. "$(dirname "$0")/shmem_lib.sh"
V=$((N - 1))
PROG=$(basename "$CHILD")
echo "$NAME: $N PEs"

# misuse MODE CALL CAUSE-REGEX
misuse() {
    local mode=$1 call=$2 cause=$3
    run_case "$mode" nonzero 5 -n "$N" "$CHILD" "$mode" "$TOKEN"
    expect_err "^$PROG: PE $V: $call: $cause" 1
    expect_err "^$PROG:" 1
    expect_err "^symtrain:" 0
    expect_err "^symrun: PE $V "
    expect_out "returned instead of ending the job" 0
    expect_err "killed by signal" 0 # the runtime ends the job; it does not crash
}

ADDR='address 0x[0-9a-f]+ \(for PE 0\)'
misuse before_init shmem_my_pe "called before shmem_init; call shmem_init"
misuse before_init_put shmem_long_p "called before shmem_init"
misuse after_finalize shmem_long_p "called after shmem_finalize"
misuse pe_too_big shmem_long_p "PE $N is out of range: the team has $N PEs? \(0 \.\. $V\)"
misuse pe_negative shmem_long_get "PE -1 is out of range"
misuse ctx_pe shmem_ctx_long_put "PE $((N + 5)) is out of range"
misuse amo_pe shmem_long_atomic_fetch_add "PE $N is out of range"
misuse put_stack shmem_long_put "$ADDR is not symmetric"
misuse get_malloc shmem_long_get "$ADDR is not symmetric"
misuse amo_stack shmem_long_atomic_add "$ADDR is not symmetric"
misuse signal_stack shmem_long_put_signal "$ADDR is not symmetric"
misuse past_end shmem_putmem "the range at 0x[0-9a-f]+ \(for PE 0\) runs past the end of the symmetric heap"
misuse misaligned_amo shmem_long_atomic_inc "address 0x[0-9a-f]+ is not aligned to the 8-byte atomic type"
misuse bad_cmp shmem_long_wait_until "comparison 99 is not one of SHMEM_CMP_"
misuse bad_sig_op shmem_putmem_signal "sig_op 7 is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD"
misuse free_private shmem_free "0x[0-9a-f]+ was not returned by shmem_malloc"
STRIDE=2305843009213693952
misuse iput_wrap shmem_long_iput "the strided destination \(2 elements of 8 bytes, $STRIDE elements apart\) spans more than the address space"
misuse iget_wrap shmem_long_iget "the strided source \(2 elements of 8 bytes, -$STRIDE elements apart\) spans more than the address space"

# A malformed heap size names the variable (every PE reads it, so every PE may say so).
CASE=bad_heap_size
SYMTRAIN_SYMMETRIC_SIZE=12Q run_case bad_heap_size nonzero 5 -n "$N" "$CHILD" pe_too_big "$TOKEN"
expect_err "SYMTRAIN_SYMMETRIC_SIZE='12Q' is not a size"
# So are spellings a float parser would take: hexadecimal, an exponent, a
# fraction of a byte; the message says which suffixes there are.
for bad in 0x10 1e3 1.5 inf; do
    CASE=bad_heap_size_$bad
    SYMTRAIN_SYMMETRIC_SIZE=$bad run_case "bad_heap_size_$bad" nonzero 5 -n "$N" "$CHILD" pe_too_big "$TOKEN"
    expect_err "SYMTRAIN_SYMMETRIC_SIZE='$bad' is not a size: .*K, M, G or T suffix"
done
finish
