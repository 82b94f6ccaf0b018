"""A PNG encoder for image summaries (8-bit gray, RGB or RGBA; zlib only, so no imaging library is needed)."""
import struct
import zlib

from ... import _backend

np = _backend.numpy

_COLOR_TYPE = {1: 0, 3: 2, 4: 6}


def _chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def encode(hwc):
    """The PNG bytes of a ``uint8`` array of shape (height, width, channels), channels 1, 3 or 4.

    >>> encode(np.zeros((2, 2, 3), np.uint8))[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    h, w, c = hwc.shape
    if hwc.dtype != np.uint8 or c not in _COLOR_TYPE:
        raise ValueError(f"a PNG needs uint8 pixels with 1, 3 or 4 channels, got {hwc.dtype} with {c}")
    rows = np.concatenate([np.zeros((h, 1), np.uint8), np.ascontiguousarray(hwc).reshape(h, w * c)], axis=1)
    header = struct.pack(">IIBBBBB", w, h, 8, _COLOR_TYPE[c], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + _chunk(b"IEND", b""))
