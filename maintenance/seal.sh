#!/usr/bin/env bash
# Keep a sealed evaluation set across sessions without opening it (the lesson of round twenty, whose sealed GPU set
# lived only in the git-ignored .sealed/ and was lost unmeasured when the next session began on a fresh machine).
#   SEAL_KEY=... maintenance/seal.sh pack .sealed/roundN    -> benchmarks/sealed/roundN.tar.gz.aes (commit it)
#   SEAL_KEY=... maintenance/seal.sh unpack roundN          -> .sealed/roundN again (git-ignored)
# The archive is AES-256-CBC with a PBKDF2 key (openssl enc); the key is the lead's, kept outside the repository (the
# closing note of the session that sealed it), so no builder can read a set by grep. A set is published in the clear
# (benchmarks/held_out/roundN/) once its after figure is taken, and its archive removed.
# All or nothing (issue 43): pack writes the archive under a temporary name, reads it back whole with the key, then
# renames it; unpack opens it into a temporary folder and renames that into place only when openssl and tar both
# ended well (a wrong key, a truncated or damaged archive leave nothing) and never over a folder that exists (whose
# files would mix with the set's). A set's name is letters, digits, '.', '_' and '-' (a file name in git, a word on
# this command line); the folder above it may be named with anything. Killed at any instant, each leaves only its
# temporary file or folder, removed on the way out where the shell can.
set -euo pipefail
case "$0" in */*) cd -- "${0%/*}/..";; *) cd ..;; esac
: "${SEAL_KEY:?SEAL_KEY: the passphrase of the seal}"
die() { echo "seal.sh: $*" >&2; exit 1; }
named() {
  [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "$(printf '%q' "$1"): a set's name is letters, digits, '.', '_' and '-'"
}
decrypt() { openssl enc -d -aes-256-cbc -pbkdf2 -iter 200000 -pass env:SEAL_KEY -in "$1"; }
tmp=
trap '[ -n "$tmp" ] && rm -rf -- "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
case "${1:-}" in
  pack)
    src=${2:?usage: seal.sh pack .sealed/roundN}
    while [[ $src == */ && $src != / ]]; do src=${src%/}; done
    name=${src##*/}
    case "$src" in */*) parent=${src%/*}; parent=${parent:-/};; *) parent=.;; esac
    named "$name"
    [ -d "$src" ] && [ ! -L "$src" ] || die "$(printf '%q' "$src"): not a folder (a link is refused: tar would keep the link)"
    mkdir -p benchmarks/sealed
    tmp=$(mktemp benchmarks/sealed/.pack.XXXXXX)
    tar -C "$parent" -czf - -- "$name" | openssl enc -aes-256-cbc -pbkdf2 -iter 200000 -salt \
        -pass env:SEAL_KEY -out "$tmp" || die "packing $(printf '%q' "$src") failed: nothing written"
    decrypt "$tmp" | tar -tzf - >/dev/null || die "the archive did not read back: nothing written"
    mv -f -- "$tmp" "benchmarks/sealed/$name.tar.gz.aes"
    tmp=
    echo "benchmarks/sealed/$name.tar.gz.aes ($(wc -c < "benchmarks/sealed/$name.tar.gz.aes") bytes)";;
  unpack)
    name=${2:?usage: seal.sh unpack roundN}
    named "$name"
    archive="benchmarks/sealed/$name.tar.gz.aes"
    [ -f "$archive" ] || die "$archive: no such archive"
    if [ -e ".sealed/$name" ] || [ -L ".sealed/$name" ]; then
      die ".sealed/$name exists: move it away first (nothing written)"
    fi
    mkdir -p .sealed
    tmp=$(mktemp -d .sealed/.unpack.XXXXXX)
    decrypt "$archive" 2>/dev/null | tar -C "$tmp" -xzf - 2>/dev/null \
      || die "$archive: a wrong key, or a truncated or damaged archive (nothing written)"
    [ "$(ls -A "$tmp")" = "$name" ] && [ -d "$tmp/$name" ] && [ ! -L "$tmp/$name" ] \
      || die "$archive holds something other than the one folder $name (nothing written)"
    mv -T -- "$tmp/$name" ".sealed/$name" || die ".sealed/$name: cannot be put in place (nothing written)"
    echo ".sealed/$name";;
  *) echo "usage: SEAL_KEY=... seal.sh pack .sealed/roundN | unpack roundN" >&2; exit 2;;
esac
