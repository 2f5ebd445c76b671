#!/usr/bin/env bash
# Speculative decoding benchmark (docs/speculative.md): genie plain vs speculative on the
# chat prompt set (T = 0 and 0.7) and prompt lookup on the code-editing set, then
# llama.cpp's llama-speculative on the same chat prompts, in one run.
# Usage: bench/speculative/run.sh [N_GEN] > results.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-48}
T=${GENIE_BENCH_THREADS:-2}
TARGET=models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
DRAFT=models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
CLI=build/bin/genie-cli
LLAMA=${LLAMA_SPECULATIVE:-$HOME/.cache/genie/reference/build-0.3.36/bin/llama-speculative}
echo "# $(date -u) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) nproc=$(nproc) load: $(cut -d' ' -f1-3 /proc/loadavg)"
for dm in 4 8; do
  echo "## genie T=0 draft-max $dm -td 1"
  $CLI bench -m $TARGET -md $DRAFT --spec-prompts bench/speculative/chat.txt -n $N -t $T -td 1 --draft-max $dm
done
echo "## genie T=0.7 draft-max 4 -td 1"
$CLI bench -m $TARGET -md $DRAFT --spec-prompts bench/speculative/chat.txt -n $N -t $T -td 1 --draft-max 4 --temp 0.7
echo "## genie prompt lookup (code edits) T=0 --spec-lookup 3 --draft-max 8"
$CLI bench -m $TARGET --spec-prompts bench/speculative/code_edit.txt -n $((2 * N)) -t $T --spec-lookup 3 --draft-max 8
# llama.cpp: one thread (OpenMP's spinning threads are pathological on a loaded machine).
while IFS= read -r prompt; do
  p=$(printf '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' "$prompt")
  for dm in 4 8; do
    echo "## llama-speculative -t 1 --spec-draft-n-max $dm: $(echo "$prompt" | cut -c1-40)"
    "$LLAMA" -m $TARGET -md $DRAFT --spec-draft-n-max $dm -t 1 -n $N --temp 0 -p "$p" 2>&1 |
      grep -E "decoded|accept  =|n_drafted" || true
  done
done < bench/speculative/chat.txt
