#!/bin/bash
# Round 22 sets (published after their after figures): score a tree, print figures only (no message text, no per-case misses).
# Usage: score.sh TREE [OUTDIR]
#   TREE    a checkout of cudnn-doctor (its own benchmarks/score_explain.py and score_compat.py are used,
#           PYTHONPATH=TREE is set by those scorers; interpreter $PYTHON, default /work/main/.venv-ci/bin/python)
#   OUTDIR  where the per-case JSON goes (default: a new folder under /tmp); never printed
# Explain: every explain41_cases*.toml in this folder, concatenated into one temporary cases file.
# Also round sixteen's placeholder counter and, if compat41_cases.toml is here, the compat scorer.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-/work/main/.venv-ci/bin/python}"
PLACEHOLDERS="/work/main/benchmarks/held_out/round16/explain41_placeholders.py"
if [ $# -lt 1 ] || [ ! -f "$1/benchmarks/score_explain.py" ] || [ ! -d "$1/cudnn_doctor" ]; then
  echo "usage: score.sh TREE [OUTDIR]  (TREE: a cudnn-doctor checkout with benchmarks/score_explain.py)" >&2
  exit 2
fi
TREE="$(cd "$1" && pwd)"
# round sixteen's counter, the tree's own copy where it has one
[ -f "$TREE/benchmarks/held_out/round16/explain41_placeholders.py" ] && PLACEHOLDERS="$TREE/benchmarks/held_out/round16/explain41_placeholders.py"
OUT="${2:-$(mktemp -d /tmp/round22-score.XXXXXX)}"
mkdir -p "$OUT" || { echo "score.sh: cannot create $OUT" >&2; exit 2; }

shopt -s nullglob
FILES=("$HERE"/explain41_cases*.toml)
if [ ${#FILES[@]} -eq 0 ]; then echo "score.sh: no explain41_cases*.toml in $HERE" >&2; exit 2; fi
CASES="$OUT/explain41_all_cases.toml"
: > "$CASES"
for f in "${FILES[@]}"; do cat "$f" >> "$CASES"; printf '\n' >> "$CASES"; done

echo "== explain: $(grep -c '^\[\[case\]\]' "$CASES") cases from ${#FILES[@]} file(s): $(for f in "${FILES[@]}"; do basename "$f"; done | tr '\n' ' ')"
echo "   tree: $TREE"
# score_explain.py: per family, per period, all related, unrelated claimed; the 'printed by' table and
# anything after it (misses are never asked for) are cut; the left-out line keeps only its count.
"$PY" "$TREE/benchmarks/score_explain.py" --cases "$CASES" --python "$PY" --workers 2 \
    --json "$OUT/explain.json" > "$OUT/explain.txt" 2> "$OUT/explain.err"
rc=$?
sed -n 's/^\(left out of the score: [0-9]* case(s)\).*/\1 (catalog examples)/p' "$OUT/explain.txt"
awk '/^printed by/ {exit} /^left out of the score/ {next} {print}' "$OUT/explain.txt" | sed '/^$/d'
grep -E '^(related cases answered with a bench code|runs that gave no explain/1 JSON)' "$OUT/explain.txt"
[ $rc -ne 0 ] && echo "score_explain.py exit status $rc (stderr in $OUT/explain.err)"

echo "== placeholders (round 16 counter)"
"$PY" "$PLACEHOLDERS" "$TREE" "$CASES" "$PY" 2> "$OUT/placeholders.err" | grep '^placeholders:'

if [ -f "$HERE/compat41_cases.toml" ]; then
  echo "== compat: $(basename "$HERE")/compat41_cases.toml"
  "$PY" "$TREE/benchmarks/score_compat.py" --cases "$HERE/compat41_cases.toml" --repo "$TREE" --workers 2 \
      --json "$OUT/compat.json" > "$OUT/compat.txt" 2> "$OUT/compat.err"
  crc=$?
  # the framework table, the 'all' right/total line and the verdict counts; the list of wrong cases is cut
  awk '/^wrong \(/ {exit} {print}' "$OUT/compat.txt" | sed '/^$/d' | grep -v ' cases in .* s ('
  [ $crc -ne 0 ] && echo "score_compat.py exit status $crc (stderr in $OUT/compat.err)"
else
  echo "== compat: no compat41_cases.toml in $HERE (skipped)"
fi
echo "(per-case JSON in $OUT; not printed)"
