#!/usr/bin/env bash
# docs_paths.sh — the documents stand on the repository alone: every file or
# folder of the tree that README.md, docs/architecture.md, docs/performance.md,
# docs/training.md and docs/deploy.md name exists, and none points outside the repository.
#   docs_paths.sh SOURCE_DIR
set -u
cd "$1" || exit 1
fails=0
for doc in README.md docs/architecture.md docs/performance.md docs/training.md docs/deploy.md; do
    # (an RPATH's $ORIGIN/.. is relative to a program, not to the repository)
    outside=$(sed 's/\$ORIGIN\/\.\.//g' "$doc" | grep -noE '\.\./[A-Za-z0-9_./-]+' || true)
    [ -z "$outside" ] || { echo "FAIL $doc points outside the repository: $outside"; fails=$((fails + 1)); }
    for p in $(grep -ohE '\b(src|tests|bench|docs|include|tools|cmake|examples|deploy)/[A-Za-z0-9_./-]*[A-Za-z0-9_/]' "$doc" | sort -u); do
        [ -e "$p" ] || { echo "FAIL $doc names $p, which does not exist"; fails=$((fails + 1)); }
    done
done
[ "$fails" = 0 ] || { echo "docs_paths: FAIL ($fails)"; exit 1; }
echo "docs_paths: PASS"
