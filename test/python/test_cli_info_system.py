"""genie-cli info --system: the machine, its ISA features and the kernel set the run-time
dispatch picked (and the GENIE_CPU_ISA override)."""
import os
import platform
import re
import subprocess


def run(cli, *args, env=None):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=60, env=env)


def fields(stdout):
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"([a-z ]+):\s+(.*)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_info_system_shape(genie_cli):
    r = run(genie_cli, "info", "--system")
    assert r.returncode == 0, r.stderr
    f = fields(r.stdout)
    for key in ("cpu", "architecture", "cpu features", "kernel sets", "kernel set", "decode walk", "threads", "cuda"):
        assert key in f, (key, r.stdout)
    assert f["architecture"] == {"x86_64": "x86_64", "aarch64": "aarch64"}.get(platform.machine(), "other")
    sets = f["kernel sets"].split(" (")[0].split()
    assert sets[0] == "scalar"
    chosen = f["kernel set"].split()[0]
    assert chosen == sets[-1]  # the dispatch picks the best available set
    if platform.machine() == "x86_64" and "avx2" in sets:
        assert "avx2" in f["cpu features"].split() and "fma" in f["cpu features"].split()
    if "avx512_vnni" in sets:
        assert "avx512vnni" in f["cpu features"].split()
    if "avx512_amx" in sets:  # needs AVX-512 VNNI too: the AMX set is that set plus tiles
        assert "avx512_vnni" in sets and "amx-int8" in f["cpu features"].split()
    assert re.match(r"\d+ hardware, \d+ usable", f["threads"])
    assert f["cuda"].startswith(("not built", "built"))


def test_info_system_override(genie_cli):
    env = dict(os.environ, GENIE_CPU_ISA="scalar")
    r = run(genie_cli, "info", "--system", env=env)
    assert r.returncode == 0, r.stderr
    assert fields(r.stdout)["kernel set"] == "scalar (GENIE_CPU_ISA=scalar)"


def test_info_system_decode_walk(genie_cli):
    # the single-row kernels' walk (docs/kernels.md): chosen for the CPU, or forced
    env = {k: v for k, v in os.environ.items() if k != "GENIE_DECODE_STREAMS"}
    default = fields(run(genie_cli, "info", "--system", env=env).stdout)["decode walk"]
    assert re.fullmatch(r"(one weight stream|two weight streams) per core \(chosen for this CPU\)", default), default
    for n, words in (("1", "one weight stream"), ("2", "two weight streams")):
        r = run(genie_cli, "info", "--system", env=dict(os.environ, GENIE_DECODE_STREAMS=n))
        assert r.returncode == 0, r.stderr
        assert fields(r.stdout)["decode walk"] == f"{words} per core (GENIE_DECODE_STREAMS={n})"
