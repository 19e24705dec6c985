#!/usr/bin/env bash
# Keep a sealed evaluation set across sessions without opening it (the lesson of round twenty, whose sealed GPU set
# lived only in the git-ignored .sealed/ and was lost unmeasured when the next session began on a fresh machine).
#   SEAL_KEY=... maintenance/seal.sh pack .sealed/roundN    -> benchmarks/sealed/roundN.tar.gz.aes (commit it)
#   SEAL_KEY=... maintenance/seal.sh unpack roundN          -> .sealed/roundN again (git-ignored)
# The archive is AES-256-CBC with a PBKDF2 key (openssl enc); the key is the lead's, kept outside the repository (the
# closing note of the session that sealed it), so no builder can read a set by grep. A set is published in the clear
# (benchmarks/held_out/roundN/) once its after figure is taken, and its archive removed.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SEAL_KEY:?SEAL_KEY: the passphrase of the seal}"
case "${1:-}" in
  pack)
    src=${2:?usage: seal.sh pack .sealed/roundN}
    name=$(basename "$src")
    mkdir -p benchmarks/sealed
    tmp=$(mktemp benchmarks/sealed/.pack.XXXXXX)
    tar -C "$(dirname "$src")" -czf - "$name" | openssl enc -aes-256-cbc -pbkdf2 -iter 200000 -salt \
        -pass env:SEAL_KEY -out "$tmp"
    mv -f "$tmp" "benchmarks/sealed/$name.tar.gz.aes"
    echo "benchmarks/sealed/$name.tar.gz.aes ($(wc -c < "benchmarks/sealed/$name.tar.gz.aes") bytes)";;
  unpack)
    name=${2:?usage: seal.sh unpack roundN}
    mkdir -p .sealed
    openssl enc -d -aes-256-cbc -pbkdf2 -iter 200000 -pass env:SEAL_KEY -in "benchmarks/sealed/$name.tar.gz.aes" \
        | tar -C .sealed -xzf -
    echo ".sealed/$name";;
  *) echo "usage: SEAL_KEY=... seal.sh pack .sealed/roundN | unpack roundN" >&2; exit 2;;
esac
