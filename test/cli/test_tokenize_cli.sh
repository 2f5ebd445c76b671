#!/usr/bin/env bash
# genie-cli tokenize / detokenize / convert-tokenizer: exact stdout checks.
# usage: test_tokenize_cli.sh GENIE_CLI TESTDATA_DIR WORK_DIR
set -u
cli="$1"; testdata="$2"; work="$3"
mkdir -p "$work"
vocab="$testdata/tokenizer/vocab"
failures=0

expect() {  # expect NAME EXPECTED_STDOUT COMMAND...
    local name="$1" want="$2"; shift 2
    local got
    got="$("$@" 2>/dev/null; printf x)"; got="${got%x}"
    if [[ "$got" != "$want" ]]; then
        printf 'FAIL %s\n  want: %q\n  got:  %q\n' "$name" "$want" "$got"
        failures=$((failures + 1))
    else
        printf 'ok   %s\n' "$name"
    fi
}

expect "spm ids" $'29871 15043 3186\n' "$cli" tokenize -m "$vocab/ggml-vocab-llama-spm.gguf" -p " Hello world"
expect "spm --add-bos" $'1 15043 3186\n' "$cli" tokenize -m "$vocab/ggml-vocab-llama-spm.gguf" -p "Hello world" --add-bos
expect "spm --parse-special" $'1 15043\n' "$cli" tokenize -m "$vocab/ggml-vocab-llama-spm.gguf" -p "<s>Hello" --parse-special
expect "gpt-2 ids" $'15496 995\n' "$cli" tokenize -m "$vocab/ggml-vocab-gpt-2.gguf" -p "Hello world"
expect "empty text" $'\n' "$cli" tokenize -m "$vocab/ggml-vocab-gpt-2.gguf" -p ""
expect "pieces" $'15496\tHello\n995\t world\n' "$cli" tokenize -m "$vocab/ggml-vocab-gpt-2.gguf" -p "Hello world" --pieces
printf 'a\xffb\n' > "$work/bytes.txt"
expect "--file exact bytes" $'64 4210 65 198\n' "$cli" tokenize -m "$vocab/ggml-vocab-gpt-2.gguf" --file "$work/bytes.txt"
expect "detokenize" "Hello world" "$cli" detokenize -m "$vocab/ggml-vocab-gpt-2.gguf" 15496 995
expect "detokenize spm" "Hello world" "$cli" detokenize -m "$vocab/ggml-vocab-llama-spm.gguf" 15043 3186
expect "detokenize render" "<s> Hello" "$cli" detokenize -m "$vocab/ggml-vocab-llama-spm.gguf" --render-special 1 15043

qwen="$work/qwen3-cli.gguf"
if "$cli" convert-tokenizer "$testdata/tokenizer/qwen" -o "$qwen" 2>/dev/null; then
    expect "qwen ids" $'9707 1879 151667\n' "$cli" tokenize -m "$qwen" -p "Hello world<think>"
    expect "qwen parse-special" $'151644 872 198\n' "$cli" tokenize -m "$qwen" -p $'<|im_start|>user\n' --parse-special
    expect "qwen detokenize" $'你好' "$cli" detokenize -m "$qwen" 108386
else
    echo "FAIL convert-tokenizer qwen"; failures=$((failures + 1))
fi

# errors: exit code 1 and nothing on stdout
out="$("$cli" tokenize -m "$work/missing.gguf" -p x 2>/dev/null)"; rc=$?
if [[ $rc -ne 1 || -n "$out" ]]; then echo "FAIL missing model: rc=$rc out=$out"; failures=$((failures + 1)); else echo "ok   missing model"; fi
out="$("$cli" detokenize -m "$vocab/ggml-vocab-gpt-2.gguf" 99999999 2>/dev/null)"; rc=$?
if [[ $rc -ne 1 || -n "$out" ]]; then echo "FAIL bad id: rc=$rc"; failures=$((failures + 1)); else echo "ok   bad id"; fi

rm -f "$qwen" "$work/bytes.txt"
exit $((failures > 0))
