# per (mode,test,size): best of rounds each side, ratio, rounds (paired) where symtrain wins
FNR==1 { f=FILENAME; n=split(f,p,"/"); mode=p[n-1]; split(p[n],q,"."); prog=q[1]; r=q[2]; test=q[3] }
/^# (symbench|osh_baseline) (put|get) latency:/ { inlat=1; next }
/^# (symbench|osh_baseline) (put|get) bandwidth:/ { inlat=0; next }
/^#/ { next }
inlat && NF==2 { k=mode SUBSEP test SUBSEP $1; v[prog,k,r]=$2; keys[k]=1; sz[k]=$1 }
END {
  for (k in keys) {
    bs=1e30; bo=1e30; win=0; nr=0
    for (r=1;r<=8;r++) { a=v["symbench",k,r]; b=v["osh",k,r]; if (a=="" || b=="") continue; nr++; if (a+0<bs) bs=a+0; if (b+0<bo) bo=b+0; if (a+0<=b+0) win++ }
    split(k,kk,SUBSEP); printf "%s %s %d %.4f %.4f %.2f %d/%d\n", kk[1], kk[2], sz[k], bs, bo, bo/bs, win, nr
  }
}
