#!/usr/bin/env bash
# ctest wrapper for one real-checkpoint golden file: runs the hidden Catch2 case on it, or
# exits 77 (ctest's SKIP_RETURN_CODE) naming the command that fetches the model.
#   run_real.sh TEST_BINARY SOURCE_DIR NAME
set -euo pipefail
bin=$1 src=$2 name=$3
models=${GENIE_MODELS_DIR:-$src/models}
file=$("${PYTHON:-python3}" -c 'import json,sys; print(json.load(open(sys.argv[1]))["file"])' \
  "$src/test/golden/real/$name.json")
if [ ! -f "$models/$file" ]; then
  echo "SKIPPED: $models/$file is missing (scripts/get-model $name; scripts/setup fetches the default model)"
  exit 77
fi
exec "$bin" "golden real: checkpoints match llama.cpp" -c "$name"
