#!/usr/bin/env bash
# ctest "voice: ...": runs genie-voice on two text turns from a file and checks that each
# turn printed its latency line and wrote a WAV with audio in it.
# Usage: test_voice.sh GENIE_VOICE MODEL OUTDIR
set -euo pipefail
voice=$1 model=$2 out=$3
mkdir -p "$out"
rm -f "$out"/turn-*.wav
printf 'Tell me a story about a cat.\nWhat happened next?\n' > "$out/turns.txt"
"$voice" -m "$model" --input "$out/turns.txt" --wav-prefix "$out/turn" --max-tokens 48 --threads 2 \
  --ctx 256 > "$out/stdout.txt"
cat "$out/stdout.txt"
for n in 1 2; do
  grep -E "^turn $n: first token [0-9.]+ ms, first sentence [0-9.]+ ms, first audio [0-9.]+ ms, total [0-9.]+ ms" \
    "$out/stdout.txt" >/dev/null || { echo "FAIL: no timing line for turn $n"; exit 1; }
  wav="$out/turn-$n.wav"
  [ -f "$wav" ] || { echo "FAIL: $wav missing"; exit 1; }
  [ "$(head -c 4 "$wav")" = "RIFF" ] || { echo "FAIL: $wav is not a WAV file"; exit 1; }
  size=$(stat -c %s "$wav")
  [ "$size" -gt 8044 ] || { echo "FAIL: $wav has no audio ($size bytes)"; exit 1; }
done
grep -E "^turn 2: .*\(([1-9][0-9]*) reused\)" "$out/stdout.txt" >/dev/null || { echo "FAIL: turn 2 was not warm"; exit 1; }
echo "PASS"
