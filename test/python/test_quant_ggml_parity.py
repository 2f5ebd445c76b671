"""Bit-exact parity of genie's (de)quantization with ggml's own reference C code.

gguf-py has no k-quant quantizers, so this compares against ggml directly: the
libggml-base shared library that the llama-cpp-python package ships exports
quantize_row_*_ref and dequantize_row_*. Skipped when that package is absent
(scripts/setup --with-reference installs it). ggml-base is compiled for the
baseline ISA, so like our reference path it has no fused multiply-adds (checked
with objdump for llama-cpp-python 0.3.36 on x86-64).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
from pathlib import Path

import numpy as np
import pytest

from quant_support import genie, parity_counts  # noqa: F401 (fixtures)
from quant_support import random_float_blocks, random_quant_blocks, same_floats

SEED = 20240608
# Blocks per type; GENIE_PARITY_BLOCKS raises it for a longer soak.
N_BLOCKS = int(os.environ.get("GENIE_PARITY_BLOCKS", "2000"))

# name -> (block size, block bytes, ggml symbol suffix)
TYPES = {
    "Q4_0": (32, 18, "q4_0"), "Q4_1": (32, 20, "q4_1"), "Q5_0": (32, 22, "q5_0"), "Q5_1": (32, 24, "q5_1"),
    "Q8_0": (32, 34, "q8_0"), "Q8_1": (32, 36, "q8_1"), "Q2_K": (256, 84, "q2_K"), "Q3_K": (256, 110, "q3_K"),
    "Q4_K": (256, 144, "q4_K"), "Q5_K": (256, 176, "q5_K"), "Q6_K": (256, 210, "q6_K"), "Q8_K": (256, 292, "q8_K"),
}
# ggml has no dequantize_row_q8_1 (Q8_1 is only a dot-product operand).
DEQUANTIZABLE = [name for name in TYPES if name != "Q8_1"]


def load_ggml_base():
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None, "llama-cpp-python (which ships libggml-base) is not installed"
    lib_dir = Path(next(iter(spec.submodule_search_locations))) / "lib"
    candidates = sorted(lib_dir.glob("libggml-base.so*")) + sorted(lib_dir.glob("libggml-base.dylib"))
    if not candidates:
        return None, f"no libggml-base in {lib_dir}"
    try:
        return ctypes.CDLL(str(candidates[0])), None
    except OSError as error:
        return None, f"cannot load {candidates[0]}: {error}"


GGML, GGML_ERROR = load_ggml_base()


@pytest.fixture(scope="module")
def ggml():
    if GGML is None:
        pytest.skip(GGML_ERROR)
    return GGML


def ggml_function(lib, symbol: str):
    function = getattr(lib, symbol)
    function.restype = None
    function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    return function


def rng_for(name: str, salt: int) -> np.random.Generator:
    return np.random.default_rng([SEED, salt, *name.encode()])


@pytest.mark.parametrize("name", list(TYPES))
def test_quantize_matches_ggml(genie, ggml, parity_counts, name):
    block_size, type_size, symbol = TYPES[name]
    values = np.ascontiguousarray(random_float_blocks(block_size, N_BLOCKS, rng_for(name, 1)).reshape(-1))

    ours = np.frombuffer(genie.quantize(name, values), dtype=np.uint8).reshape(N_BLOCKS, type_size)
    # Zero-filled: for an all-zero block ggml's Q8_K leaves bsums unwritten (we write zeros).
    theirs = np.zeros((N_BLOCKS, type_size), dtype=np.uint8)
    ggml_function(ggml, f"quantize_row_{symbol}_ref")(values.ctypes.data, theirs.ctypes.data, values.size)

    differing = np.flatnonzero((ours != theirs).any(axis=1))
    assert differing.size == 0, (
        f"{name}: {differing.size} of {N_BLOCKS} blocks differ; first block {differing[0]}:\n"
        f"genie {ours[differing[0]].tobytes().hex()}\nggml  {theirs[differing[0]].tobytes().hex()}"
    )
    parity_counts[("quantize vs ggml", name)] += N_BLOCKS


@pytest.mark.parametrize("name", DEQUANTIZABLE)
def test_dequantize_matches_ggml(genie, ggml, parity_counts, name):
    block_size, type_size, symbol = TYPES[name]
    blocks = np.ascontiguousarray(random_quant_blocks(type_size, name, N_BLOCKS, rng_for(name, 2)))

    ours = genie.dequantize(name, blocks.tobytes())
    theirs = np.empty(N_BLOCKS * block_size, dtype=np.float32)
    ggml_function(ggml, f"dequantize_row_{symbol}")(blocks.ctypes.data, theirs.ctypes.data, theirs.size)

    same = same_floats(ours, theirs)
    first = int(np.argmin(same))
    assert same.all(), (
        f"{name}: {int((~same).sum())} values differ; first at {first}: genie {ours[first]!r} vs ggml {theirs[first]!r}"
    )
    parity_counts[("dequantize vs ggml", name)] += N_BLOCKS


@pytest.mark.parametrize("name", ["Q4_K", "Q5_K", "Q6_K", "Q2_K", "Q3_K"])
def test_quantize_then_dequantize_matches_ggml(genie, ggml, parity_counts, name):
    """Real quantizer output (not random bytes) through both dequantizers."""
    block_size, _, symbol = TYPES[name]
    values = np.ascontiguousarray(random_float_blocks(block_size, N_BLOCKS, rng_for(name, 3)).reshape(-1))
    data = genie.quantize(name, values)
    ours = genie.dequantize(name, data)
    buffer = np.frombuffer(data, dtype=np.uint8).copy()
    theirs = np.empty(values.size, dtype=np.float32)
    ggml_function(ggml, f"dequantize_row_{symbol}")(buffer.ctypes.data, theirs.ctypes.data, theirs.size)
    assert same_floats(ours, theirs).all()
    parity_counts[("quantize+dequantize vs ggml", name)] += N_BLOCKS


def mix(i: np.ndarray) -> np.ndarray:
    """mix() of test_quant.cpp: a 32-bit integer hash, on uint64 arrays."""
    h = (i * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
    return ((h ^ (h >> np.uint64(15))) * np.uint64(2246822519)) & np.uint64(0xFFFFFFFF)


def golden_input() -> np.ndarray:
    """golden_input() of test/unit/test_quant.cpp: 128 super-blocks built from
    float bit patterns and float32 products, so both languages get the same values."""
    i = np.arange(128 * 256, dtype=np.uint64)
    h = mix(i)
    block = i // np.uint64(256)
    kind = (block % np.uint64(4)).astype(np.int64)
    e = (block % np.uint64(11)).astype(np.int64) - 5
    sign = np.where(kind == 2, 0, (h >> np.uint64(31)).astype(np.int64))
    exponent = 125 + ((h >> np.uint64(23)) & np.uint64(3)).astype(np.int64) + e
    mantissa = (h & np.uint64(0x7FFFFF)).astype(np.int64)
    x = ((sign << 31) | (exponent << 23) | mantissa).astype(np.uint32).view(np.float32)
    k = ((h >> np.uint64(8)) % np.uint64(17)).astype(np.int64) - 8
    scale_bits = ((120 + e) << 23) | (mix(block + np.uint64(7919)) & np.uint64(0x7FFFFF)).astype(np.int64)
    scale = scale_bits.astype(np.uint32).view(np.float32)
    x = np.where(kind == 1, k.astype(np.float32) * scale, x)
    x = np.where((kind == 3) & (i % np.uint64(256) == 0), x * np.float32(64), x)
    return x.astype(np.float32)


def fnv1a(data: bytes) -> int:
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def test_cpp_golden_hashes_come_from_ggml(ggml):
    """The golden table of test_quant.cpp (which runs without llama-cpp-python)
    must be exactly what ggml produces."""
    source = (Path(__file__).resolve().parents[1] / "unit" / "test_quant.cpp").read_text()
    table = source[source.index("// golden-hashes-begin"):source.index("// golden-hashes-end")]
    rows = re.findall(r"\{DType::(\w+), (0x[0-9a-f]+)ull, (0x[0-9a-f]+ull|0)\}", table)
    assert {name for name, _, _ in rows} == set(TYPES)
    x = golden_input()
    for name, quantized, dequantized in rows:
        block_size, type_size, symbol = TYPES[name]
        data = np.zeros(x.size // block_size * type_size, dtype=np.uint8)
        ggml_function(ggml, f"quantize_row_{symbol}_ref")(x.ctypes.data, data.ctypes.data, x.size)
        assert fnv1a(data.tobytes()) == int(quantized, 16), name
        if dequantized != "0":
            y = np.empty(x.size, dtype=np.float32)
            ggml_function(ggml, f"dequantize_row_{symbol}")(data.ctypes.data, y.ctypes.data, y.size)
            assert fnv1a(y.tobytes()) == int(dequantized.removesuffix("ull"), 16), name
