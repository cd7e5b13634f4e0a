# awk -f md.awk TEST table.txt: the markdown rows of docs/performance.md for put or get from
# table.awk's output (mode test size sym old osh osh/sym old/sym won).
BEGIN { test = ARGV[1]; ARGV[1] = "" }
$2 == test && NF == 9 { k = $3; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
  cell[$1, k] = sprintf("%s | %s | %s | %s | %s", $4, $5, $6, $7, $9) }
function h(s) { return s >= 1048576 ? s / 1048576 " MiB" : s >= 1024 ? s / 1024 " KiB" : s }
END { for (i = 1; i <= n; i++) { k = order[i]; printf "| %s | %s | %s |\n", h(k), cell["cache", k], cell["stream", k] } }
