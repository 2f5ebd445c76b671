"""genie-cli info: the contract output on real models, and clear errors on bad files."""
import struct
import subprocess

from gguf_layout import tensor_offset_fields


def run(cli, *args):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=60)


def test_info_stories260k(genie_cli, testdata):
    r = run(genie_cli, "info", testdata / "models" / "stories260K.gguf")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "architecture:  llama" in out
    assert "48 tensors" in out
    assert "model:         5 layers, embedding 64, 8 heads (4 kv), feed-forward 172, context 2048, vocab 512" in out
    assert "tokenizer:     SentencePiece (llama), 512 tokens" in out
    assert "chat template: absent" in out
    assert "token_embd.weight" in out and "[64, 512]" in out
    summary = [line for line in out.splitlines() if line.startswith("summary:")]
    assert len(summary) == 1
    # 292800 parameters, all F32 -> 32 bits per weight
    assert "(292800)" in summary[0] and "48xF32" in summary[0] and "32.00 bits per weight" in summary[0]


def test_info_f16_model_and_vocab_only(genie_cli, testdata):
    r = run(genie_cli, "info", testdata / "models" / "llama-2-tiny-random.gguf")
    assert r.returncode == 0, r.stderr
    assert "9xF16, 3xF32" in r.stdout
    assert "file type:     MOSTLY_F16" in r.stdout
    r = run(genie_cli, "info", testdata / "tokenizer" / "vocab" / "ggml-vocab-phi-3.gguf")
    assert r.returncode == 0, r.stderr
    assert "32064 tokens" in r.stdout and "chat template: present" in r.stdout


def _bad(genie_cli, tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    r = run(genie_cli, "info", path)
    assert r.returncode != 0
    assert r.stdout == "" or "error" not in r.stdout
    assert str(path) in r.stderr  # the message names the file
    return r.stderr


def test_info_truncated(genie_cli, testdata, tmp_path):
    data = (testdata / "models" / "stories260K.gguf").read_bytes()
    err = _bad(genie_cli, tmp_path, "truncated-header.gguf", data[:1000])
    assert "[FORMAT]" in err and "truncated" in err and "offset" in err
    err = _bad(genie_cli, tmp_path, "truncated-data.gguf", data[: len(data) - 5000])
    assert "[FORMAT]" in err and "past the end of the file" in err


def test_info_corrupted_magic(genie_cli, testdata, tmp_path):
    data = bytearray((testdata / "models" / "stories260K.gguf").read_bytes())
    data[0:4] = b"GGML"
    err = _bad(genie_cli, tmp_path, "magic.gguf", bytes(data))
    assert "[FORMAT]" in err and "magic 'GGUF'" in err and "'GGML'" in err and "offset 0" in err


def test_info_tensor_offset_past_end(genie_cli, testdata, tmp_path):
    data = bytearray((testdata / "models" / "stories260K.gguf").read_bytes())
    name, start, pos = tensor_offset_fields(data)[3]
    struct.pack_into("<Q", data, pos, 1 << 32)  # aligned, far past the end
    err = _bad(genie_cli, tmp_path, "offset.gguf", bytes(data))
    assert "[FORMAT]" in err and f"tensor '{name}'" in err and "past the end" in err and f"offset {start}:" in err


def test_info_missing_file_and_usage(genie_cli, tmp_path):
    r = run(genie_cli, "info", tmp_path / "nope.gguf")
    assert r.returncode != 0 and "NOT_FOUND" in r.stderr
    r = run(genie_cli, "info")
    assert r.returncode == 2 and "usage" in r.stderr
