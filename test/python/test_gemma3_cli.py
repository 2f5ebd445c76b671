"""Gemma 3 through the tools: genie-make-model's gemma3 presets (and their K-quant fallback
for 640-wide rows, as llama.cpp's quantizer does), genie-cli info's local/global layer
pattern, and genie-cli run on the generated model."""
import subprocess


def run(exe, *args, timeout=120):
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def make(genie_cli, testdata, tmp_path, *args):
    out = tmp_path / "gemma3.gguf"
    r = run(genie_cli.parent / "genie-make-model", "--arch", "gemma3", *args, "--vocab-gguf",
            testdata / "tokenizer" / "vocab" / "ggml-vocab-llama-spm.gguf", "-o", out)
    assert r.returncode == 0, r.stderr
    return out


def test_tiny_preset_pattern_and_run(genie_cli, testdata, tmp_path):
    model = make(genie_cli, testdata, tmp_path, "--preset", "tiny", "--type", "q8_0")
    r = run(genie_cli, "info", model)
    assert r.returncode == 0, r.stderr
    assert "architecture:  gemma3" in r.stdout
    assert ("attention:     5 local layers (sliding window 16, RoPE base 10000), 1 global (RoPE base 1e+06); "
            "pattern period 6") in r.stdout
    assert "layer pattern: LLLLLG (L local, G global)" in r.stdout
    assert "post_attention_norm.weight" in r.stdout and "post_ffw_norm.weight" in r.stdout
    r = run(genie_cli, "run", "-m", model, "-p", "Once upon a time", "-n", "24", "--temp", "0", "-t", "2")
    assert r.returncode == 0, r.stderr


def test_270m_shape_falls_back_from_k_quants_on_640_wide_rows(genie_cli, testdata, tmp_path):
    model = make(genie_cli, testdata, tmp_path, "--preset", "gemma3-270m", "--layers", "6", "--type", "q4_k_m")
    r = run(genie_cli, "info", model)
    assert r.returncode == 0, r.stderr
    assert "layer pattern: LLLLLG (L local, G global)" in r.stdout
    rows = {line.split()[0]: line.split()[1] for line in r.stdout.splitlines() if line.startswith("  blk.")}
    # 640-wide inputs: Q4_K -> Q5_0, Q6_K (layer 5 is one of Q4_K_M's "more bits" layers)
    # -> Q8_0; the 1024- and 2048-wide ones keep their K-quant
    assert rows["blk.0.attn_q.weight"] == "Q5_0"
    assert rows["blk.0.ffn_up.weight"] == "Q5_0"
    assert rows["blk.0.attn_v.weight"] == "Q5_0"
    assert rows["blk.5.attn_v.weight"] == "Q8_0"
    assert rows["blk.0.attn_output.weight"] == "Q4_K"
    assert rows["blk.5.ffn_down.weight"] == "Q6_K"
    assert "attention.key_length                     256" in r.stdout


def test_preset_and_arch_must_match(genie_cli, testdata, tmp_path):
    r = run(genie_cli.parent / "genie-make-model", "--arch", "llama", "--preset", "gemma3-tiny", "--vocab-gguf",
            testdata / "tokenizer" / "vocab" / "ggml-vocab-llama-spm.gguf", "-o", tmp_path / "x.gguf")
    assert r.returncode != 0
    assert "does not go with --arch llama" in r.stderr
