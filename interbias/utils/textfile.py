"""Reading a user's text file: UTF-8 (a leading byte-order mark dropped) or one clear error."""

from __future__ import annotations

from pathlib import Path

from interbias.utils.errors import InterbiasError
from interbias.utils.paths import not_a_file


def read_utf8(path: Path, *, what: str, error: type[InterbiasError]) -> str:
    """The text of ``path``. A path that is not a regular file (folder, FIFO, link loop) or
    bytes that are not UTF-8 raise ``error`` naming the file, what it is, and the offset of the
    first bad byte. Excel's "CSV UTF-8" byte-order mark is accepted and dropped."""
    path = Path(path)
    problem = not_a_file(path)
    if problem:
        raise error(f"{what} {path} {problem}" if problem != "file does not exist" else f"{what} {path} does not exist")
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        ) from None
