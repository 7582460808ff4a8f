"""The output a terminal keeps (``agent_bridge.terminals``): its last bytes, cut at a
UTF-8 character boundary."""

from __future__ import annotations

import codecs

__all__ = ["OutputBuffer"]


class OutputBuffer:
    """The last ``limit`` bytes of a command's output, never starting inside a UTF-8
    character. Sans-I/O: feed it bytes, read text."""

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError("limit must not be negative")
        self.limit = limit
        self.truncated = False
        self._data = bytearray()

    def __len__(self) -> int:
        return len(self._data)

    def append(self, data: bytes) -> None:
        self._data += data
        excess = len(self._data) - self.limit
        if excess > 0:
            self.truncated = True
            del self._data[:excess]
            # Never start with a continuation byte (10xxxxxx): drop a cut character's rest.
            cut = 0
            while cut < len(self._data) and self._data[cut] & 0xC0 == 0x80:
                cut += 1
            del self._data[:cut]

    def text(self, *, final: bool) -> str:
        """The output as text. While more may come (``final`` False), an incomplete
        character at the end is held back; invalid bytes become U+FFFD."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return decoder.decode(bytes(self._data), final=final)
