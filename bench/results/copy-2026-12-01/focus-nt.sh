cd /work/wt-d15/build
export UCX_TLS=sm,self SHMEM_SYMMETRIC_SIZE=512M SYMTRAIN_SYMMETRIC_SIZE=512M
O=bench-results/focus2; mkdir -p $O
for mode in cache stream; do
  A="--min-size 1M --max-size 4M --iters 10000"; [ $mode = stream ] && A="$A --stream 256M"
  for r in 1 2 3 4; do
    for t in put get; do
      ./symrun -n 2 ./symbench $t $A > $O/$mode.sym.$r.$t 2>&1
      SYMTRAIN_COPY_NT_MIN=1M ./symrun -n 2 ./symbench $t $A > $O/$mode.symnt.$r.$t 2>&1
      oshrun --allow-run-as-root --oversubscribe -np 2 bench/osh_baseline $t $A > $O/$mode.osh.$r.$t 2>&1
    done
  done
done
echo done
