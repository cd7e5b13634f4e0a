# awk -f table.awk OUT/*/*.*.*: per mode, test and size the best of the rounds
# of each program (sym, old, osh; latency in us), osh/sym and old/sym, and in
# how many rounds (each program's best-of-5 in that round) sym was at least as
# fast as osh.
FNR == 1 { n = split(FILENAME, p, "/"); mode = p[n - 1]; split(p[n], q, "."); prog = q[1]; r = q[2]; test = q[3] }
/^# (symbench|osh_baseline) (put|get) latency:/ { inlat = 1; next }
/^# (symbench|osh_baseline) (put|get) bandwidth:/ { inlat = 0; next }
/^#/ { next }
inlat && NF == 2 { k = mode " " test; v[prog, k, $1, r] = $2; if (!((k, $1) in seen)) { seen[k, $1] = 1; order[k] = order[k] " " $1 } ; keys[k] = 1; if (r > R) R = r }
END {
  for (k in keys) {
    printf "\n%s: sym old osh (us, best of %d rounds) osh/sym old/sym won\n", k, R
    ns = split(order[k], sz, " ")
    for (j = 1; j <= ns; j++) {
      s = sz[j]; bs = bo = bn = 1e30; win = nr = 0
      for (r = 1; r <= R; r++) {
        a = v["sym", k, s, r]; b = v["osh", k, s, r]; c = v["old", k, s, r]
        if (a == "" || b == "") continue
        nr++; if (a + 0 < bs) bs = a + 0; if (b + 0 < bo) bo = b + 0; if (c != "" && c + 0 < bn) bn = c + 0
        if (a + 0 <= b + 0) win++
      }
      printf "%s %s %.4g %.4g %.4g %.2f %.2f %d/%d\n", k, s, bs, bn, bo, bo / bs, bn / bs, win, nr
    }
  }
}
