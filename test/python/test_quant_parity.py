"""Bit-exact parity of genie's (de)quantization with gguf-py (pip package `gguf`).

gguf.quants mirrors ggml's reference code in numpy. It dequantizes every type
tested here but quantizes only some of them (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, BF16
and F16 as of gguf 0.19); the k-quant quantizers are compared with ggml itself
in test_quant_ggml_parity.py and checked for round-trip error in the C++ tests.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from gguf import GGMLQuantizationType, quants
from gguf.constants import GGML_QUANT_SIZES

from quant_support import genie, parity_counts  # noqa: F401 (fixtures)
from quant_support import random_float_blocks, random_quant_blocks, same_floats

SEED = 20240607
# Blocks per type; GENIE_PARITY_BLOCKS raises it for a longer soak.
N_BLOCKS = int(os.environ.get("GENIE_PARITY_BLOCKS", "2000"))

BLOCK_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
QUANTIZABLE = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K"]


# Huge inputs are deliberate; numpy warns when gguf casts them to an fp16 inf.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


def qtype(name: str) -> GGMLQuantizationType:
    return GGMLQuantizationType[name]


def gguf_quantizes(name: str) -> bool:
    block_size, _ = GGML_QUANT_SIZES[qtype(name)]
    try:
        quants.quantize(np.zeros((1, block_size), dtype=np.float32), qtype(name))
        return True
    except NotImplementedError:
        return False


# The block types gguf can quantize (asked, not assumed, so a newer gguf adds coverage).
GGUF_QUANTIZABLE = [name for name in QUANTIZABLE if gguf_quantizes(name)]


def rng_for(name: str, salt: int) -> np.random.Generator:
    return np.random.default_rng([SEED, salt, *name.encode()])


@pytest.mark.parametrize("name", BLOCK_TYPES)
def test_dequantize_matches_gguf(genie, parity_counts, name):
    block_size, type_size = GGML_QUANT_SIZES[qtype(name)]
    blocks = random_quant_blocks(type_size, name, N_BLOCKS, rng_for(name, 1))

    ours = genie.dequantize(name, blocks.tobytes())
    theirs = quants.dequantize(blocks, qtype(name)).reshape(-1).astype(np.float32)

    assert ours.dtype == np.float32 and ours.shape == (N_BLOCKS * block_size,)
    same = same_floats(ours, theirs)
    first = int(np.argmin(same))
    assert same.all(), (
        f"{name}: {int((~same).sum())} of {same.size} values differ; first at {first} "
        f"(block {first // block_size}): genie {ours[first]!r} vs gguf {theirs[first]!r}"
    )
    parity_counts[("dequantize vs gguf", name)] += N_BLOCKS


@pytest.mark.parametrize("name", ["F16", "BF16"])
def test_dequantize_every_16_bit_pattern_matches_gguf(genie, parity_counts, name):
    patterns = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    ours = genie.dequantize(name, patterns.tobytes())
    theirs = quants.dequantize(patterns.view(np.uint8).reshape(-1, 2), qtype(name)).reshape(-1)
    same = same_floats(ours, theirs)
    assert same.all(), f"{name}: patterns {patterns[~same][:8]} differ"
    parity_counts[("dequantize vs gguf", name)] += patterns.size


@pytest.mark.parametrize("name", GGUF_QUANTIZABLE)
def test_quantize_matches_gguf(genie, parity_counts, name):
    block_size, type_size = GGML_QUANT_SIZES[qtype(name)]
    values = random_float_blocks(block_size, N_BLOCKS, rng_for(name, 2))

    ours = np.frombuffer(genie.quantize(name, values.reshape(-1)), dtype=np.uint8).reshape(N_BLOCKS, type_size)
    theirs = quants.quantize(values, qtype(name)).reshape(N_BLOCKS, type_size)

    differing = np.flatnonzero((ours != theirs).any(axis=1))
    assert differing.size == 0, (
        f"{name}: {differing.size} of {N_BLOCKS} blocks differ; first block {differing[0]}: "
        f"genie {ours[differing[0]].tobytes().hex()} vs gguf {theirs[differing[0]].tobytes().hex()}"
    )
    parity_counts[("quantize vs gguf", name)] += N_BLOCKS


def conversion_inputs(rng: np.random.Generator) -> np.ndarray:
    """float32 inputs for F16/BF16 conversion: random bit patterns (every exponent,
    NaN and inf included), realistic values, and the rounding corner cases."""
    random_bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    realistic = random_float_blocks(32, 2000, rng).reshape(-1)
    corners = np.array(
        [0.0, -0.0, 1.0, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8, 2**-24, 2**-25, 3 * 2**-25,
         2**-25 * 1.0000001, 65504, 65519.99, 65520, 1e10, -1e10, np.inf, -np.inf, np.nan,
         np.finfo(np.float32).max, np.finfo(np.float32).tiny, 2**-149],
        dtype=np.float32,
    )
    return np.concatenate([random_bits, realistic, corners]).astype(np.float32)


def test_quantize_f16_matches_gguf(genie, parity_counts):
    values = conversion_inputs(rng_for("F16", 3))
    ours = np.frombuffer(genie.quantize("F16", values), dtype=np.uint16)
    theirs = quants.quantize(values, qtype("F16")).view(np.uint16)
    # NaN payloads are not specified (ggml itself differs between its F16C and
    # scalar paths); a NaN must stay a NaN.
    nan = np.isnan(values)
    assert np.array_equal(ours[~nan], theirs[~nan])
    assert np.isnan(ours[nan].view(np.float16)).all()
    parity_counts[("quantize vs gguf", "F16")] += values.size


def test_quantize_bf16_matches_gguf(genie, parity_counts):
    values = conversion_inputs(rng_for("BF16", 3))
    ours = np.frombuffer(genie.quantize("BF16", values), dtype=np.uint16)
    theirs = quants.quantize(values, qtype("BF16")).view(np.uint16)
    differing = np.flatnonzero(ours != theirs)
    assert differing.size == 0, f"inputs {values.view(np.uint32)[differing[:8]]} differ"
    parity_counts[("quantize vs gguf", "BF16")] += values.size


def test_module_surface(genie):
    assert isinstance(genie.__version__, str) and genie.__version__.count(".") == 2
    assert genie.can_quantize("q4_k") and genie.can_dequantize("Q4_K")
    assert not genie.can_quantize("IQ2_XXS") and not genie.can_dequantize("iq2_xxs")
    with pytest.raises(ValueError, match="unknown tensor type name"):
        genie.can_quantize("Q9_9")
    with pytest.raises(ValueError, match="Q4_0"):
        genie.quantize("Q4_0", np.zeros(33, dtype=np.float32))
    with pytest.raises(ValueError, match="whole number"):
        genie.dequantize("Q4_0", b"\0" * 17)
    with pytest.raises(NotImplementedError, match="IQ2_XXS"):
        genie.dequantize("IQ2_XXS", b"\0" * 66)
    with pytest.raises(NotImplementedError, match="IQ4_NL"):
        genie.quantize("IQ4_NL", np.zeros(32, dtype=np.float32))
    # float64 input is converted, 2-D input refused
    assert genie.quantize("F32", np.arange(4.0)) == np.arange(4, dtype=np.float32).tobytes()
    with pytest.raises(ValueError, match="1-D"):
        genie.quantize("F32", np.zeros((2, 2), dtype=np.float32))


def test_dequantize_accepts_any_contiguous_buffer(genie):
    halves = np.array([[1, 2], [3, -4]], dtype=np.float16)
    expected = np.array([1, 2, 3, -4], dtype=np.float32)
    for data in (halves.tobytes(), bytearray(halves.tobytes()), memoryview(halves.tobytes()), halves.view(np.uint8)):
        assert np.array_equal(genie.dequantize("F16", data), expected)
    with pytest.raises(ValueError, match="contiguous"):
        genie.dequantize("F16", halves.view(np.uint8)[:, ::2])
    assert genie.dequantize("Q4_K", b"").shape == (0,)
    assert genie.quantize("Q4_K", np.zeros(0, dtype=np.float32)) == b""
