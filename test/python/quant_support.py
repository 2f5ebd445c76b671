"""Shared pieces of the quant parity tests: deterministic data and two fixtures.

Fixtures (import them into a test module to use them):
  genie          -- the genie extension module (conftest's genie_module, which
                    skips the tests with the reason when it is not built).
  parity_counts  -- a dict (check, type name) -> blocks verified bit-exact; the
                    totals are printed in pytest's terminal summary.

Data:

random_quant_blocks(): random block bytes whose fp16 scale fields are replaced by
finite halves (so both sides compare numbers, not NaN/inf arithmetic), with
every 20th block given extreme scales (0, -0, subnormals, the largest finite).
random_float_blocks(): float32 rows mixing the shapes real tensors have and the
corner cases quantizers branch on (all zero, constant, one outlier, tiny, huge).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

# Byte offsets of the fp16 scale fields in one block (ggml's layouts).
HALF_OFFSETS = {
    "Q4_0": [0], "Q5_0": [0], "Q8_0": [0],
    "Q4_1": [0, 2], "Q5_1": [0, 2], "Q8_1": [0, 2], "Q4_K": [0, 2], "Q5_K": [0, 2],
    "Q2_K": [80, 82], "Q3_K": [108], "Q6_K": [208],
}
# Q8_K keeps its scale as a float32 at offset 0.
FLOAT_OFFSETS = {"Q8_K": [0]}

EXTREME_HALVES = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF], dtype=np.uint16)


def reasonable_halves(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random finite halves with magnitudes 2^-12 .. 2^5 and random sign."""
    sign = rng.integers(0, 2, n, dtype=np.uint16) << 15
    exponent = rng.integers(15 - 12, 15 + 5, n, dtype=np.uint16) << 10
    mantissa = rng.integers(0, 1024, n, dtype=np.uint16)
    return sign | exponent | mantissa


def random_quant_blocks(type_size: int, type_name: str, n_blocks: int, rng: np.random.Generator) -> np.ndarray:
    """n_blocks random blocks of a quantized type as a (n_blocks, type_size) uint8 array."""
    blocks = rng.integers(0, 256, (n_blocks, type_size), dtype=np.uint8)
    extreme = np.arange(n_blocks) % 20 == 19
    for offset in HALF_OFFSETS.get(type_name, []):
        halves = reasonable_halves(rng, n_blocks)
        halves[extreme] = rng.choice(EXTREME_HALVES, int(extreme.sum()))
        blocks[:, offset:offset + 2] = halves.view(np.uint8).reshape(n_blocks, 2)
    for offset in FLOAT_OFFSETS.get(type_name, []):
        halves = reasonable_halves(rng, n_blocks)
        halves[extreme] = rng.choice(EXTREME_HALVES, int(extreme.sum()))
        floats = halves.view(np.float16).astype(np.float32)
        blocks[:, offset:offset + 4] = floats.view(np.uint8).reshape(n_blocks, 4)
    return blocks


def random_float_blocks(block_size: int, n_blocks: int, rng: np.random.Generator) -> np.ndarray:
    """(n_blocks, block_size) float32 values; block i has shape kind i % 10."""
    out = np.empty((n_blocks, block_size), dtype=np.float32)
    for i in range(n_blocks):
        kind = i % 10
        scale = np.float32(10.0 ** rng.uniform(-4, 3))
        if kind == 0:
            x = rng.standard_normal(block_size)
        elif kind == 1:
            x = rng.uniform(-1, 1, block_size)
        elif kind == 2:
            x = rng.uniform(0, 1, block_size)  # all positive: min > 0 paths
        elif kind == 3:
            x = -rng.uniform(0, 1, block_size)  # all negative
        elif kind == 4:
            x = rng.standard_normal(block_size)
            x[rng.integers(0, block_size)] *= 50  # one outlier
        elif kind == 5:
            x = rng.laplace(size=block_size)
        elif kind == 6:
            x = np.round(rng.standard_normal(block_size) * 4) / 4  # many exact ties
        elif kind == 7:
            x = np.full(block_size, rng.standard_normal())  # constant
        elif kind == 8:
            x = np.zeros(block_size)
            x[rng.integers(0, block_size, 3)] = rng.standard_normal(3)  # mostly zero
        else:
            x = np.zeros(block_size)  # all zero
        out[i] = (x * scale).astype(np.float32)
    return out


def same_floats(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: identical float32 bits, or both NaN."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    b = np.ascontiguousarray(b, dtype=np.float32)
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


class _ParityReport:
    """pytest plugin printing the parity counts at the end of the run."""

    def __init__(self):
        self.counts: dict[tuple[str, str], int] = defaultdict(int)

    def pytest_terminal_summary(self, terminalreporter):
        if not self.counts:
            return
        terminalreporter.section("quant parity: blocks verified bit-exact (counted when the check passed)")
        for (check, type_name), count in sorted(self.counts.items()):
            terminalreporter.write_line(f"{check:<28} {type_name:<6} {count:>7}")


@pytest.fixture(scope="session")
def parity_counts(request):
    plugin = request.config.pluginmanager.get_plugin("genie-quant-parity")
    if plugin is None:
        plugin = _ParityReport()
        request.config.pluginmanager.register(plugin, "genie-quant-parity")
    return plugin.counts


@pytest.fixture(scope="session")
def genie(genie_module):
    return genie_module
