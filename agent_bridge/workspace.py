"""The workspace: the one place that decides every path an agent or client names.

`resolve` proves a path is inside the root by its real path (symlinks followed,
`..` applied to what they point at, components compared, never string
prefixes). Reads and writes then reopen that real path by walking down from an
open root descriptor with O_NOFOLLOW at every step, so a directory swapped for
a symlink after `resolve` is refused instead of followed. POSIX only.

A symlink inside the root that points inside the root is followed (by
`resolve`); a write then goes to its target. Writes to a file with more than
one hard link are refused: the other links may live outside the root.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Final, NoReturn

__all__ = [
    "FileNotFound",
    "FileRefused",
    "PathOutsideWorkspace",
    "Workspace",
    "WorkspaceError",
]

security_logger = logging.getLogger("agent_sessions.security")

_DIR_FLAGS: Final = (
    getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
)
_READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK: Final = 1024 * 1024
_RESERVED_KEYS: Final = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "event",
    "path",
    "reason",
}


class WorkspaceError(Exception):
    """A path or file the workspace will not touch; `reason` is a short machine word."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{reason}: {path!r}")
        self.path = path
        self.reason = reason


class PathOutsideWorkspace(WorkspaceError):
    """The path does not name a place inside the root (or the root was replaced)."""


class FileRefused(WorkspaceError):
    """The path is inside, but the file is not one we read or write."""


class FileNotFound(WorkspaceError):
    """The path is inside, but nothing is there."""


class Workspace:
    """A directory agents may read and write in, and nothing outside it."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_file_bytes: int = 10 * 1024 * 1024,
        context: Mapping[str, str] | None = None,
    ) -> None:
        if max_file_bytes < 0:
            raise ValueError("max_file_bytes must not be negative")
        self._context = dict(context or {})
        clashes = _RESERVED_KEYS.intersection(self._context)
        if clashes:
            raise ValueError(f"context keys clash with log record fields: {sorted(clashes)}")
        self._max_file_bytes = max_file_bytes
        given = os.fspath(root)
        self._given_root = os.path.abspath(given)
        self._root = Path(os.path.realpath(given))
        try:
            st = os.stat(self._root)
        except FileNotFoundError:
            raise FileNotFound(given, "not_found") from None
        if not stat.S_ISDIR(st.st_mode):
            raise self._refuse(FileRefused, given, "not_a_directory")
        self._root_id = (st.st_dev, st.st_ino)
        self._name_max = _limit(self._root, "PC_NAME_MAX", 255)
        self._path_max = _limit(self._root, "PC_PATH_MAX", 4096)

    @property
    def root(self) -> Path:
        """The real path of the root directory."""
        return self._root

    @property
    def max_file_bytes(self) -> int:
        """The largest file read_text returns or write_text writes."""
        return self._max_file_bytes

    def check_root(self) -> None:
        """Raise PathOutsideWorkspace if the root is gone or was replaced."""
        self._check_root(str(self._root))

    def _check_root(self, given: str) -> None:
        root = str(self._root)
        try:
            st = os.lstat(root)
        except OSError:
            raise self._refuse(PathOutsideWorkspace, given, "root_missing") from None
        if (
            stat.S_ISLNK(st.st_mode)
            or (st.st_dev, st.st_ino) != self._root_id
            or os.path.realpath(root) != root
            or (self._given_root != root and os.path.realpath(self._given_root) != root)
        ):
            raise self._refuse(PathOutsideWorkspace, given, "root_replaced")

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """Return the real path of `path` (absolute, or relative to root) inside root.

        The path need not exist. Raises PathOutsideWorkspace for anything else.
        """
        given = os.fspath(path)
        if "\x00" in given:
            raise self._refuse(PathOutsideWorkspace, given, "nul_byte")
        try:
            os.fsencode(given)
        except UnicodeEncodeError:
            raise self._refuse(PathOutsideWorkspace, given, "invalid_name") from None
        self._check_root(given)
        candidate = os.path.join(self._root, given)  # an absolute `given` wins
        lexical = Path(os.path.normpath(candidate))
        inside_lexically = _is_within(lexical, self._root) or _is_within(
            lexical, Path(self._given_root)
        )
        # Before realpath: it lstat()s every prefix, work quadratic in the number of
        # components (a 1 MB `a/a/a/...` held the event loop for minutes), and a path the
        # kernel refuses (ENAMETOOLONG) is no place an agent or client can use anyway.
        too_long = self._too_long(candidate)
        if too_long:
            cls = FileRefused if inside_lexically else PathOutsideWorkspace
            raise self._refuse(cls, given, too_long if inside_lexically else "outside")
        real = Path(os.path.realpath(candidate))
        if _is_within(real, self._root):
            too_long = self._too_long(str(real))  # symlinks may lengthen it
            if too_long:
                raise self._refuse(FileRefused, given, too_long)
            return real
        reason = "symlink_escape" if inside_lexically else "outside"
        raise self._refuse(PathOutsideWorkspace, given, reason)

    def _too_long(self, path: str) -> str | None:
        """Why the kernel would refuse `path` (path_too_long, name_too_long), or None."""
        encoded = os.fsencode(path)
        if len(encoded) >= self._path_max:  # PATH_MAX counts the terminating NUL
            return "path_too_long"
        if any(len(part) > self._name_max for part in encoded.split(b"/")):
            return "name_too_long"
        return None

    def read_text(self, path: str, *, line: int | None = None, limit: int | None = None) -> str:
        """Read a regular file as UTF-8 (bad bytes replaced).

        `line` is 1-based and `limit` counts lines; ValueError if out of range.
        """
        if (line is not None and line < 1) or (limit is not None and limit < 0):
            raise ValueError("line must be >= 1 and limit >= 0")
        data = self.read_bytes(path)
        return _slice_lines(data.decode("utf-8", errors="replace"), line, limit)

    def read_bytes(self, path: str) -> bytes:
        """Read a regular file's bytes (at most ``max_file_bytes``)."""
        given = os.fspath(path)
        real = self.resolve(given)
        dir_fd, name = self._open_parent(real, given, create=False)
        try:
            self._check_existing(dir_fd, name, given, missing_ok=False)
            fd = self._open_at(dir_fd, name, given, _READ_FLAGS)
        finally:
            os.close(dir_fd)
        try:
            if self._check_open_file(fd, given).st_size > self._max_file_bytes:
                raise self._refuse(FileRefused, given, "too_large")
            return self._read_bounded(fd, given)
        finally:
            os.close(fd)

    def write_text(self, path: str, content: str) -> None:
        """Create or overwrite a regular file (and missing parent directories) with `content`."""
        self.write_bytes(path, content.encode("utf-8"))

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or overwrite a regular file (and missing parent directories) with `data`."""
        given = os.fspath(path)
        if len(data) > self._max_file_bytes:
            raise self._refuse(FileRefused, given, "too_large")
        real = self.resolve(given)
        dir_fd, name = self._open_parent(real, given, create=True)
        try:
            self._check_parent(dir_fd, real.parent, given)
            self._check_existing(dir_fd, name, given, missing_ok=True)
            fd = self._open_at(dir_fd, name, given, _WRITE_FLAGS)
        finally:
            os.close(dir_fd)
        try:
            if self._check_open_file(fd, given).st_nlink > 1:
                raise self._refuse(FileRefused, given, "hardlink")
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    # -- walking -------------------------------------------------------------

    def _open_parent(self, real: Path, given: str, *, create: bool) -> tuple[int, str]:
        """Open the directory holding `real` without following any symlink.

        Returns (directory fd, final name); the caller closes the fd.
        """
        parts = real.relative_to(self._root).parts
        if not parts or given.endswith(os.sep):
            raise self._refuse(FileRefused, given, "not_regular_file")  # a directory
        fd = self._open_root(given)
        for name in parts[:-1]:
            fd = self._open_dir_at(fd, name, given, create=create)
        return fd, parts[-1]

    def _open_root(self, given: str) -> int:
        try:
            fd = os.open(self._root, _DIR_FLAGS)
        except OSError:
            raise self._refuse(PathOutsideWorkspace, given, "root_replaced") from None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != self._root_id:
            os.close(fd)
            raise self._refuse(PathOutsideWorkspace, given, "root_replaced")
        return fd

    def _open_dir_at(self, dir_fd: int, name: str, given: str, *, create: bool) -> int:
        """Open directory `name` under `dir_fd`, creating it if asked; closes `dir_fd`."""
        try:
            try:
                return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=dir_fd)
                except FileExistsError:
                    pass  # created meanwhile: the open below checks what it is
                return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            self._raise_for_os_error(exc, dir_fd, name, given)
        finally:
            os.close(dir_fd)

    def _check_parent(self, dir_fd: int, parent: Path, given: str) -> None:
        """After creating directories: the parent's real path is still what we resolved."""
        try:
            same = os.path.realpath(parent) == str(parent) and os.path.samestat(
                os.stat(parent), os.fstat(dir_fd)
            )
        except OSError:
            same = False
        if not same:
            raise self._refuse(PathOutsideWorkspace, given, "symlink_escape")

    def _check_existing(self, dir_fd: int, name: str, given: str, *, missing_ok: bool) -> None:
        """Refuse what is at `name` before opening it: no symlink, FIFO, device or dir."""
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            if missing_ok:
                return
            raise FileNotFound(given, "not_found") from None
        except OSError as exc:
            self._raise_for_os_error(exc, dir_fd, name, given)
        if stat.S_ISLNK(st.st_mode):
            raise self._refuse(PathOutsideWorkspace, given, "symlink_escape")
        if not stat.S_ISREG(st.st_mode):
            raise self._refuse(FileRefused, given, "not_regular_file")

    def _open_at(self, dir_fd: int, name: str, given: str, flags: int) -> int:
        try:
            return os.open(name, flags, 0o666, dir_fd=dir_fd)
        except OSError as exc:
            self._raise_for_os_error(exc, dir_fd, name, given)

    def _check_open_file(self, fd: int, given: str) -> os.stat_result:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise self._refuse(FileRefused, given, "not_regular_file")
        return st

    def _read_bounded(self, fd: int, given: str) -> bytes:
        """Read to EOF, refusing a file that grew past the limit since fstat."""
        chunks: list[bytes] = []
        total = 0
        while total <= self._max_file_bytes:
            chunk = os.read(fd, min(_CHUNK, self._max_file_bytes + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
        raise self._refuse(FileRefused, given, "too_large")

    # -- refusing ------------------------------------------------------------

    def _raise_for_os_error(self, exc: OSError, dir_fd: int, name: str, given: str) -> NoReturn:
        """Turn an OSError met while opening `name` into a WorkspaceError (or re-raise)."""
        code = exc.errno
        if code == errno.ENOENT:
            raise FileNotFound(given, "not_found") from None
        if code in (errno.ELOOP, errno.ENOTDIR):
            try:
                is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
            except OSError:
                is_link = code == errno.ELOOP
            if is_link:
                raise self._refuse(PathOutsideWorkspace, given, "symlink_escape") from None
            raise self._refuse(FileRefused, given, "not_a_directory") from None
        reasons = {
            errno.EISDIR: "not_regular_file",
            errno.ENXIO: "not_regular_file",
            errno.ENAMETOOLONG: "name_too_long",
            errno.EACCES: "permission_denied",
            errno.EPERM: "permission_denied",
        }
        if code in reasons:
            raise self._refuse(FileRefused, given, reasons[code]) from None
        raise exc

    def _refuse(self, cls: type[WorkspaceError], given: str, reason: str) -> WorkspaceError:
        """Log one security warning and return the exception to raise."""
        security_logger.warning(
            "workspace refused path (%s)",
            reason,
            extra={"event": "path_refused", "path": given, "reason": reason, **self._context},
        )
        return cls(given, reason)


def _limit(root: Path, name: str, default: int) -> int:
    """A pathconf limit of the root's file system (`default` where it has none)."""
    try:
        value = os.pathconf(root, name)
    except (OSError, ValueError):
        return default
    return value if value > 0 else default


def _is_within(path: Path, root: Path) -> bool:
    """Component-wise containment: /ws/repo-evil is not within /ws/repo."""
    return path.parts[: len(root.parts)] == root.parts


def _slice_lines(text: str, line: int | None, limit: int | None) -> str:
    """Lines `line`.. (1-based), at most `limit` of them, newlines kept."""
    if line is None and limit is None:
        return text
    start = (line or 1) - 1
    parts = text.split("\n")
    stop = len(parts) if limit is None else min(start + limit, len(parts))
    if start >= stop:
        return ""
    selected = "\n".join(parts[start:stop])
    return selected + "\n" if stop < len(parts) else selected
