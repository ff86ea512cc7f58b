"""The SSH wire encoding (RFC 4251 section 5): uint32, string and mpint, read with bounds."""

from __future__ import annotations

import struct

from specbench.errors import SpecbenchError

MAX_FIELD_BYTES = 64 * 1024
"""No field of a key or signature comes near this; a larger length is malformed input."""


class WireError(SpecbenchError):
    """Bytes that are not the SSH encoding they claim to be."""


def put_u32(value: int) -> bytes:
    return struct.pack(">I", value)


def put_string(data: bytes | str) -> bytes:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return put_u32(len(raw)) + raw


def put_mpint(value: int) -> bytes:
    """A non-negative integer, big-endian, with a leading zero byte when its top bit is set."""
    if value < 0:
        raise ValueError("only non-negative mpints are written")
    if value == 0:
        return put_string(b"")
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return put_string(b"\x00" + raw if raw[0] & 0x80 else raw)


class Reader:
    """Reads fields from one SSH-encoded buffer, refusing truncation and oversized lengths."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.offset = 0
        self.what = what

    def _take(self, size: int) -> bytes:
        end = self.offset + size
        if end > len(self.data):
            raise WireError(f"{self.what} is truncated: expected {size} more bytes at offset {self.offset}")
        out = self.data[self.offset : end]
        self.offset = end
        return out

    def raw(self, size: int) -> bytes:
        return self._take(size)

    def u32(self) -> int:
        value: int = struct.unpack(">I", self._take(4))[0]
        return value

    def string(self) -> bytes:
        size = self.u32()
        if size > MAX_FIELD_BYTES:
            raise WireError(f"{self.what} holds a field of {size} bytes, over the limit of {MAX_FIELD_BYTES}")
        return self._take(size)

    def text(self) -> str:
        raw = self.string()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise WireError(f"{self.what} holds a name that is not UTF-8") from err

    def mpint(self) -> int:
        raw = self.string()
        if raw and raw[0] & 0x80:
            raise WireError(f"{self.what} holds a negative integer")
        return int.from_bytes(raw, "big")

    def end(self) -> None:
        if self.offset != len(self.data):
            raise WireError(f"{self.what} has {len(self.data) - self.offset} bytes of trailing data")
