cd /work/wt-d15/build
export UCX_TLS=sm,self SHMEM_SYMMETRIC_SIZE=512M SYMTRAIN_SYMMETRIC_SIZE=512M
A="--min-size 8K --max-size 64K --stream 256M --iters 5000"
O=bench-results/focus
for r in 1 2 3 4 5 6; do
  ./symrun -n 2 ./symbench get $A > $O/sym.$r 2>&1
  SYMTRAIN_COPY_NT_MIN=4K ./symrun -n 2 ./symbench get $A > $O/symnt.$r 2>&1
  oshrun --allow-run-as-root --oversubscribe -np 2 bench/osh_baseline get $A > $O/osh.$r 2>&1
done
echo done
