"""genie-cli bench: the llama-bench-shaped table and the --json figures, on a tiny model
(stories260K, so the run takes well under a second). Shapes and consistency only: no
timing is asserted."""
import json
import re
import subprocess


def run(cli, *args):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_bench_table(genie_cli, testdata):
    model = testdata / "models" / "stories260K.gguf"
    r = run(genie_cli, "bench", "-m", model, "-p", "8,16", "-n", "4", "-r", 2, "-t", 2, "--ttft-prompt", 10)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["model", "size", "params", "backend", "threads", "test", "t/s"]
    assert re.fullmatch(r"\|( -+:? \|)+", lines[1]), lines[1]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:5]]
    assert [row[5] for row in rows] == ["pp8", "pp16", "tg4"]
    for row in rows:
        assert row[0].startswith("llama ")
        assert row[1].endswith(" MiB") and row[2].endswith(" M")
        assert row[3].startswith("CPU (") and row[4] == "2"
        m = re.fullmatch(r"(\d+\.\d\d) ± (\d+\.\d\d)", row[6])
        assert m and float(m.group(1)) > 0, row[6]
    # All rows of the table are equally wide (aligned columns).
    assert len({len(line) for line in lines[:5]}) == 1
    assert any(re.fullmatch(r"ttft: 10 prompt tokens, 2 threads: \d+\.\d\d ± \d+\.\d\d ms", line) for line in lines)
    assert any(re.fullmatch(r"peak rss: \d+\.\d MiB", line) for line in lines)
    assert any(line.startswith("load: ") for line in lines)
    # The mapped weights: how much is resident and on 2 MiB pages (smaps of the model file).
    assert any(re.fullmatch(r"weights on 2 MiB pages: \d+\.\d % of \d+\.\d MiB mapped", line) for line in lines), lines
    assert r.stderr == ""


def test_bench_json(genie_cli, testdata):
    model = testdata / "models" / "stories260K.gguf"
    r = run(genie_cli, "bench", "-m", model, "-p", 8, "-n", 4, "-r", 2, "-t", 1, "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["model"]["params"] == 292800 and j["model"]["architecture"] == "llama"
    assert j["model"]["size_bytes"] > 0 and j["load_ms"] > 0 and j["peak_rss_bytes"] > 1 << 20
    assert 0 < j["model"]["decode_bytes"] <= j["model"]["size_bytes"]
    pages = j["weights_pages"]
    assert 0 < pages["resident_bytes"] <= j["model"]["size_bytes"] + (1 << 16)
    assert 0 <= pages["huge_page_bytes"] <= pages["resident_bytes"]
    assert j["repetitions"] == 2 and j["isa"]
    assert [t["test"] for t in j["tests"]] == ["pp8", "tg4"]
    for t in j["tests"]:
        assert t["threads"] == 1 and len(t["samples_ns"]) == 2 and len(t["samples_ts"]) == 2
        n = t["n_prompt"] + t["n_gen"]
        for ns, ts in zip(t["samples_ns"], t["samples_ts"]):
            assert abs(ts - n * 1e9 / ns) <= 1e-6 * ts
        assert abs(t["avg_ts"] - sum(t["samples_ts"]) / 2) <= 1e-6 * t["avg_ts"]
        assert t["stddev_ts"] >= 0
    (ttft,) = j["ttft"]
    assert ttft["prompt_tokens"] == 100 and len(ttft["samples_ms"]) == 2 and ttft["avg_ms"] > 0


def test_bench_depth(genie_cli, testdata):
    """-d D: the tests run with D tokens already in the cache, named as llama-bench names them."""
    model = testdata / "models" / "stories260K.gguf"
    r = run(genie_cli, "bench", "-m", model, "-p", 8, "-n", 4, "-d", "0,40", "-r", 2, "-t", 1, "--ttft-prompt", 0, "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert [(t["test"], t["n_depth"]) for t in j["tests"]] == [("pp8", 0), ("tg4", 0), ("pp8 @ d40", 40), ("tg4 @ d40", 40)]
    for t in j["tests"]:
        assert len(t["samples_ts"]) == 2 and all(x > 0 for x in t["samples_ts"])
    r = run(genie_cli, "bench", "-m", model, "-p", 0, "-n", 4, "-d", 60, "-r", 1, "-t", 1, "--ttft-prompt", 0)
    assert r.returncode == 0, r.stderr
    assert "| tg4 @ d60 |" in r.stdout.replace("  ", " ")
    r = run(genie_cli, "bench", "-m", model, "-n", 4, "-d", "-5")
    assert r.returncode == 1 and "-d expects" in r.stderr and r.stdout == ""


def test_bench_errors(genie_cli, testdata, tmp_path):
    r = run(genie_cli, "bench")
    assert r.returncode == 2 and "usage" in r.stderr
    r = run(genie_cli, "bench", "-m", tmp_path / "missing.gguf", "-p", 8)
    assert r.returncode == 1 and "NOT_FOUND" in r.stderr and r.stdout == ""
    r = run(genie_cli, "bench", "-m", testdata / "models" / "stories260K.gguf", "-p", "8,x")
    assert r.returncode == 1 and "-p expects" in r.stderr


def test_bench_backend(genie_cli, testdata):
    """--backend: cpu is the default; cuda runs on the GPU where there is one and fails with
    the device's reason where there is none (no silent fallback to the CPU)."""
    model = testdata / "models" / "stories260K.gguf"
    r = run(genie_cli, "bench", "-m", model, "-p", 8, "-n", 2, "-r", 1, "-t", 1, "--ttft-prompt", 0, "--backend", "cpu", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["backend"].startswith("CPU (")
    r = run(genie_cli, "bench", "-m", model, "-p", 8, "--backend", "tpu")
    assert r.returncode == 1 and "--backend: 'tpu' (auto, cpu or cuda)" in r.stderr
    r = run(genie_cli, "bench", "-m", model, "-p", 8, "-n", 2, "-r", 1, "-t", 1, "--ttft-prompt", 0, "--backend", "cuda", "--json")
    if r.returncode == 0:
        assert json.loads(r.stdout)["backend"].startswith("CUDA")
    else:
        assert r.returncode == 1 and ("DEVICE" in r.stderr or "UNSUPPORTED" in r.stderr), r.stderr
        assert r.stdout == ""
