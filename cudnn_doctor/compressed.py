"""A compressed file read as gzip(1), xz(1) and bzip2(1) read it, one reader for `image` (a `docker save` compressed
as a whole, image/sources.py) and `install` (an archive's tar stream, install/archive.py): one stream after another,
the zero bytes between and after them skipped, anything else after a stream refused, a stream cut short an EOFError."""

from __future__ import annotations

import io
from typing import IO, Any

MAGIC = {"gz": b"\x1f\x8b", "xz": b"\xfd7zXZ\x00", "bz2": b"BZh"}
NAMES = {"gz": "gzip", "xz": "xz", "bz2": "bzip2"}


def kind_of(head: bytes) -> str | None:
    """gz, xz or bz2 by a file's first bytes (never tried in turn), None for anything else."""
    return next((kind for kind, magic in MAGIC.items() if head.startswith(magic)), None)


class Streams(io.RawIOBase):
    """A gzip, xz or bzip2 file read as gzip(1), xz(1) and bzip2(1) read it, where Python's GzipFile and LZMAFile do
    not: one stream after another (pigz, pxz, `cat a.xz b.xz`), the zero bytes between and after them skipped (xz's
    stream padding; a file padded to a tape's or a disk's block), and anything else after a stream said as what it is
    (docker's own reader refuses it too: Go's gzip, the xz it runs; tar -xJf and xz -t refuse it) rather than ignored
    or taken for a cut stream. Seeking back starts over from the first byte, as those readers do (image's
    _BoundedInflate counts it)."""

    CHUNK = 1 << 16

    def __init__(self, raw: IO[bytes], kind: str) -> None:
        self.raw, self.kind, self.start = raw, kind, raw.tell()
        self._begin()

    def _new(self):  # type: ignore[no-untyped-def]
        import bz2
        import lzma
        import zlib

        if self.kind == "gz":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return lzma.LZMADecompressor() if self.kind == "xz" else bz2.BZ2Decompressor()

    def _begin(self) -> None:
        self.decompressor, self.position, self.finished, self.streams = self._new(), 0, False, 1
        self.left = b""  # input read but not yet given to the decompressor

    def _restart(self) -> None:
        self.raw.seek(self.start)
        self._begin()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def _next_stream(self, rest: bytes) -> bool:
        """After a stream's end: skip zero bytes, then start the next stream; False at the file's end."""
        while True:
            rest = rest.lstrip(b"\0")
            if rest:
                break
            rest = self.raw.read(self.CHUNK)
            if not rest:
                return False
        magic = MAGIC[self.kind]
        if not magic.startswith(rest[:len(magic)]):
            name = NAMES[self.kind]
            raise EOFError(f"after its {self.streams} {name} stream{'s' if self.streams > 1 else ''} the file "
                           f"holds bytes that are not {name} ({rest[:8]!r}...): an appended or damaged file")
        self.decompressor, self.left = self._new(), rest
        self.streams += 1
        return True

    def _produce(self, size: int) -> bytes:
        import lzma
        import zlib

        name = NAMES[self.kind]
        while not self.finished:
            if self.decompressor.eof:
                if not self._next_stream(self.decompressor.unused_data):
                    self.finished = True
                    break
            if self.kind != "gz" and not self.decompressor.needs_input:
                data = b""  # output it holds back past SIZE: asked for again with no new input
            else:
                data, self.left = self.left or self.raw.read(self.CHUNK), b""
                if not data:
                    raise EOFError(f"the {name} stream ends before its end-of-stream marker (a copy cut short)")
            try:
                out: bytes = self.decompressor.decompress(data, size)
            except (zlib.error, lzma.LZMAError, OSError) as error:  # OSError: bz2's "Invalid data stream"
                raise EOFError(f"the {name} stream is damaged ({error})") from None
            if self.kind == "gz":
                self.left = self.decompressor.unconsumed_tail  # zlib gives back the input it did not reach
            if out:
                self.position += len(out)
                return out
        return b""

    def readinto(self, buffer: Any) -> int:
        out = self._produce(len(buffer))
        buffer[:len(out)] = out
        return len(out)

    def seek(self, offset: int, whence: int = 0) -> int:
        target = offset if whence == io.SEEK_SET else self.position + offset if whence == io.SEEK_CUR else None
        if target is None:  # from the end: the whole stream is read to find it
            while self._produce(self.CHUNK):
                pass
            target = self.position + offset
        if target < self.position:
            self._restart()
        while self.position < target and self._produce(min(self.CHUNK, target - self.position)):
            pass
        return self.position

    def tell(self) -> int:
        return self.position
