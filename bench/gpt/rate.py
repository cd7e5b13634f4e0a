"""Tokens per second of a `symtrain train --metrics` file over the steps
after the first 3 (warm-up): every step moves the same global batch, so N
steps over the sum of their durations (1 / rate each, in units of the batch)
is the rate over the run. Prints it, or "none" when no step is past the
warm-up.

    python3 bench/gpt/rate.py METRICS.jsonl
"""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if '"tokens_per_s"' in l]
rows = [r for r in rows if r["step"] > 3]
print(f"{len(rows) / sum(1.0 / r['tokens_per_s'] for r in rows):.0f}" if rows else "none")
