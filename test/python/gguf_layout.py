"""A minimal GGUF header walker for tests that need byte positions of header fields
(e.g. to corrupt a tensor offset). Independent of libgenie's reader on purpose."""
import struct

_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def _skip_value(buf, pos, vtype):
    if vtype in _SCALAR:
        return pos + struct.calcsize("<" + _SCALAR[vtype])
    if vtype == 8:  # string
        (n,) = struct.unpack_from("<Q", buf, pos)
        return pos + 8 + n
    if vtype == 9:  # array
        etype, count = struct.unpack_from("<IQ", buf, pos)
        pos += 12
        for _ in range(count):
            pos = _skip_value(buf, pos, etype)
        return pos
    raise ValueError(f"bad value type {vtype} at {pos}")


def tensor_offset_fields(buf):
    """Returns [(tensor name, position of its tensor-info entry, position of its u64 data
    offset field)] in file order."""
    assert buf[:4] == b"GGUF"
    n_tensors, n_kv = struct.unpack_from("<QQ", buf, 8)
    pos = 24
    for _ in range(n_kv):
        (klen,) = struct.unpack_from("<Q", buf, pos)
        pos += 8 + klen
        (vtype,) = struct.unpack_from("<I", buf, pos)
        pos = _skip_value(buf, pos + 4, vtype)
    out = []
    for _ in range(n_tensors):
        start = pos
        (nlen,) = struct.unpack_from("<Q", buf, pos)
        name = bytes(buf[pos + 8 : pos + 8 + nlen]).decode()
        pos += 8 + nlen
        (n_dims,) = struct.unpack_from("<I", buf, pos)
        pos += 4 + 8 * n_dims + 4
        out.append((name, start, pos))
        pos += 8
    return out
