"""Persistent compile cache: compiled programs on disk, shared by processes.

Layout: `<NEURONSIM_CACHE_DIR>/programs/<key>.nprog`, one file per compile-cache key (the key of
the memory cache: graph hash, input shapes/dtypes/strides, options, compiler version). A file:

    b"NSIMPRG\\0"                 8 bytes, magic
    header length                 4 bytes, little-endian uint32
    header                        JSON: container, key, compiler, program_format, build,
                                  payload_bytes, payload_sha256, graph, created
    payload                       the program in CBOR (neuronsim._C.Program.to_bytes())

- Writes go to a temporary file in the same folder, renamed over the entry (os.replace): a
  reader sees a whole old entry or a whole new one, never a partial one; two processes
  compiling the same graph both write whole entries and the last rename wins. A folder that
  cannot be written (read-only, full, not a folder) gives one warning per folder and process;
  compilation goes on without the disk cache.
- A read never blocks and never raises: it opens only a regular file (lstat first, then
  O_NOFOLLOW | O_NONBLOCK and fstat), of at most entry_limit() bytes (NEURONSIM_CACHE_MAX_MB,
  capped at MAX_ENTRY_BYTES), so a FIFO, device, directory, symlink or huge sparse file at an
  entry path is rejected without reading it. It then checks the magic, the header, the key,
  the payload's length and sha256, and the versions: the compiler version, the program format
  version and the build (sha256 of the native module). A bad entry (any of the above) gives one
  warning, an entry of another version or build one warning per process; either way the
  entry is removed and the graph recompiled. When it cannot be removed (a non-empty folder,
  no permission) the warning says so, the entry is ignored and the graph still compiles.
  An entry that cannot be opened (no permission) gives one warning per folder and is skipped.
- A hit sets the entry's mtime to now; after each write the least recently used entries are
  removed until the folder holds at most NEURONSIM_CACHE_MAX_MB.
- NEURONSIM_DISABLE_CACHE=1 turns the disk cache off (the in-memory cache stays).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import stat
import struct
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from . import native

log = logging.getLogger("neuronsim")

CACHE_DIR_ENV = "NEURONSIM_CACHE_DIR"
MAX_MB_ENV = "NEURONSIM_CACHE_MAX_MB"
DISABLE_ENV = "NEURONSIM_DISABLE_CACHE"
DEFAULT_MAX_MB = 1024.0

MAGIC = b"NSIMPRG\x00"
CONTAINER_VERSION = 1
ENTRY_SUFFIX = ".nprog"
TMP_PREFIX = ".tmp-"
SUBDIR = "programs"
# A temporary file this old belongs to a process that died while writing it.
STALE_TMP_SECONDS = 3600.0
# No entry larger than this is written or read (a larger file at an entry path is treated as
# corrupt), whatever NEURONSIM_CACHE_MAX_MB says: the programs of real models are a few MB, and
# reading is bounded so that a huge (or sparse) file cannot exhaust memory.
MAX_ENTRY_BYTES = 256 * 1024 * 1024
# Opening an entry must not follow a symlink (O_NOFOLLOW) nor wait for a FIFO's writer
# (O_NONBLOCK); lstat has already rejected both, this covers a swap between lstat and open.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_READ_CHUNK = 1 << 20
_PREFIX = struct.Struct("<8sI")


class CacheWarning(UserWarning):
    """A disk compile-cache entry that could not be used (removed if possible, and recompiled),
    or a cache folder that cannot be written."""


@dataclass(frozen=True)
class DiskConfig:
    directory: str  # the programs folder
    max_bytes: int


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "neuronsim")


def cache_root() -> str | None:
    """The cache folder from the environment, or None when the disk cache is disabled."""
    if os.environ.get(DISABLE_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return None
    return os.path.abspath(os.path.expanduser(os.environ.get(CACHE_DIR_ENV) or default_cache_dir()))


def config_from_env() -> DiskConfig | None:
    root = cache_root()
    if root is None:
        return None
    return DiskConfig(os.path.join(root, SUBDIR), _max_bytes())


def _max_bytes() -> int:
    value = os.environ.get(MAX_MB_ENV, "").strip()
    megabytes = DEFAULT_MAX_MB
    if value:
        try:
            megabytes = float(value)
        except ValueError:
            _warn_once(
                f"bad-max:{value}",
                f"neuronsim: {MAX_MB_ENV}={value!r} is not a number; using {DEFAULT_MAX_MB:g} MB",
            )
    return max(0, int(megabytes * 1024 * 1024))


@functools.cache
def build_id() -> str:
    """sha256 (prefix) of the native module: programs of another build are not reused, even
    when the compiler version string did not change."""
    path = getattr(native.lib(), "__file__", None)
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:  # type: ignore[arg-type]
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except (OSError, TypeError):
        digest.update(f"{native.compiler_version()}:{path}".encode())
    return digest.hexdigest()[:16]


@functools.cache
def _versions() -> dict[str, Any]:
    return {
        "container": CONTAINER_VERSION,
        "compiler": native.compiler_version(),
        "program_format": int(getattr(native.lib(), "PROGRAM_FORMAT_VERSION", 1)),
        "build": build_id(),
    }


_warned: set[str] = set()
# Entry paths a read found bad and could not remove: writing them fails too, and that second
# failure is the same problem, already reported.
_unremovable: set[str] = set()
_warned_lock = threading.Lock()


def _warn_once(tag: str, message: str) -> None:
    with _warned_lock:
        if tag in _warned:
            log.debug("%s", message)
            return
        _warned.add(tag)
    warnings.warn(message, CacheWarning, stacklevel=4)


def reset_warnings() -> None:
    with _warned_lock:
        _warned.clear()
        _unremovable.clear()


class _Invalid(Exception):
    def __init__(
        self, reason: str, identity: tuple[int, ...] = (), other_version: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.identity = identity  # of the file found bad, when known before decoding
        self.other_version = other_version


@dataclass(frozen=True)
class LoadResult:
    program: Any | None
    invalid: bool = False  # an unusable entry was found (removed if it could be)


class DiskCache:
    """The entries of one folder. Methods never raise for I/O problems: they warn and go on."""

    def __init__(self, config: DiskConfig) -> None:
        self.config = config

    def path(self, key: str) -> str:
        return os.path.join(self.config.directory, key + ENTRY_SUFFIX)

    # Reading ---------------------------------------------------------------------------------

    def entry_limit(self) -> int:
        """The largest entry written or read, in bytes."""
        return min(self.config.max_bytes, MAX_ENTRY_BYTES)

    def load(self, key: str) -> LoadResult:
        path = self.path(key)
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return LoadResult(None)  # not cached (or no cache folder: store() says so)
        except OSError as error:
            return self._unreadable(path, error)
        invalid = self._implausible(st)
        if invalid is not None:
            return self._reject(path, _identity(st), invalid)
        try:
            st, data = self._read(path)
        except FileNotFoundError:
            return LoadResult(None)  # removed by another process meanwhile
        except _Invalid as invalid:
            return self._reject(path, invalid.identity, invalid)
        except (OSError, MemoryError) as error:
            return self._unreadable(path, error)
        try:
            program = self._decode(key, data)
        except _Invalid as invalid:
            return self._reject(path, _identity(st), invalid)
        try:
            os.utime(path, follow_symlinks=False)  # least recently used = oldest mtime
        except OSError:
            pass
        return LoadResult(program)

    def _implausible(self, st: os.stat_result) -> _Invalid | None:
        """Why a file with this stat cannot be an entry, or None."""
        if not stat.S_ISREG(st.st_mode):
            return _Invalid(f"not a regular file: {_file_kind(st.st_mode)}", _identity(st))
        limit = self.entry_limit()
        if st.st_size > limit:
            return _Invalid(
                f"{st.st_size} bytes, more than the {limit}-byte limit of an entry", _identity(st)
            )
        return None

    def _read(self, path: str) -> tuple[os.stat_result, bytes]:
        """The bytes of the regular file at `path`, read through a descriptor that is checked
        again (the path may have been replaced since lstat); at most entry_limit() bytes."""
        fd = os.open(path, _OPEN_FLAGS)
        try:
            st = os.fstat(fd)
            invalid = self._implausible(st)
            if invalid is not None:
                raise invalid
            limit = self.entry_limit()
            chunks: list[bytes] = []
            total = 0
            while chunk := os.read(fd, min(_READ_CHUNK, limit + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:  # grew while we read it
                    raise _Invalid(f"more than the {limit}-byte limit of an entry", _identity(st))
            return st, b"".join(chunks)
        finally:
            os.close(fd)

    def _decode(self, key: str, data: bytes) -> Any:
        if len(data) < _PREFIX.size:
            raise _Invalid(f"truncated: {len(data)} bytes")
        magic, header_size = _PREFIX.unpack_from(data)
        if magic != MAGIC:
            raise _Invalid("not a neuronsim cache entry (bad magic)")
        header_end = _PREFIX.size + header_size
        if header_end > len(data):
            raise _Invalid(f"truncated header: {len(data)} bytes")
        try:
            header = json.loads(data[_PREFIX.size : header_end])
            if not isinstance(header, dict):
                raise ValueError("not an object")
        except (ValueError, RecursionError) as error:  # RecursionError: deeply nested garbage
            raise _Invalid(f"unreadable header ({type(error).__name__}: {error})") from None
        versions = _versions()
        for name, expected in versions.items():
            if header.get(name) != expected:
                raise _Invalid(
                    f"{name} {str(header.get(name))[:40]!r}, this neuronsim has {expected!r}",
                    other_version=True,
                )
        if header.get("key") != key:
            raise _Invalid(f"it holds key {str(header.get('key'))[:16]}...")
        payload = memoryview(data)[header_end:]
        if len(payload) != header.get("payload_bytes"):
            raise _Invalid(
                f"truncated: payload of {len(payload)} bytes, expected "
                f"{str(header.get('payload_bytes'))[:40]}"
            )
        if hashlib.sha256(payload).hexdigest() != header.get("payload_sha256"):
            raise _Invalid("checksum mismatch")
        lib = native.lib()
        try:
            return lib.Program.from_bytes(bytes(payload))
        except Exception as error:  # noqa: BLE001 - a bad entry must only ever cost a recompile
            raise _Invalid(f"unreadable program ({type(error).__name__}: {error})") from None

    def _unreadable(self, path: str, error: BaseException) -> LoadResult:
        _warn_once(
            f"read:{self.config.directory}",
            f"neuronsim: cannot read {path} ({_describe(error)}); ignoring it and recompiling",
        )
        return LoadResult(None)

    def _reject(self, path: str, identity: tuple[int, ...], invalid: _Invalid) -> LoadResult:
        """Removes a bad entry (if it is still the file we looked at) and says what happened."""
        outcome = _remove_if_same(path, identity)
        if outcome not in (_REMOVED, _GONE):
            with _warned_lock:
                _unremovable.add(path)
            what = "is corrupted"
            if invalid.other_version:
                what = "holds a program of another neuronsim version or build"
            _warn_once(
                f"unremovable:{path}:{identity}",
                f"neuronsim: disk compile cache entry {path} {what} ({invalid.reason}) and "
                f"could not remove it ({outcome}); ignoring it and recompiling",
            )
        elif invalid.other_version:
            _warn_once(
                f"version:{self.config.directory}",
                f"neuronsim: the disk compile cache {self.config.directory} holds programs of "
                f"another neuronsim version or build ({invalid.reason}); they are removed and "
                "recompiled as they are found",
            )
        else:
            done = "removed it" if outcome == _REMOVED else "another process removed or replaced it"
            _warn_once(
                f"corrupt:{path}:{identity}",
                f"neuronsim: disk compile cache entry {path} is corrupted ({invalid.reason}); "
                f"{done} and recompiling",
            )
        return LoadResult(None, invalid=True)

    # Writing ---------------------------------------------------------------------------------

    def store(self, key: str, program: Any, graph: str) -> tuple[bool, int]:
        """Writes the entry atomically; returns (written, entries eviction removed)."""
        try:
            payload = program.to_bytes()
        except (AttributeError, RuntimeError, ValueError) as error:
            log.debug("not storing %s on disk: %s", graph, error)
            return False, 0
        header = json.dumps(
            {
                **_versions(),
                "key": key,
                "payload_bytes": len(payload),
                "payload_sha256": hashlib.sha256(payload).hexdigest(),
                "graph": graph,
                "created": time.time(),
            },
            sort_keys=True,
        ).encode()
        data = _PREFIX.pack(MAGIC, len(header)) + header + payload
        if len(data) > self.entry_limit():
            log.debug(
                "not storing %s on disk: %d bytes exceed the %d-byte limit of an entry (%s)",
                graph,
                len(data),
                self.entry_limit(),
                MAX_MB_ENV,
            )
            return False, 0
        directory, path = self.config.directory, self.path(key)
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = _create_temp(directory, key)
        except OSError as error:
            self._write_failed(
                path,
                f"neuronsim: cannot write the disk compile cache in {directory} ({error}); "
                f"set {CACHE_DIR_ENV} to a writable folder or {DISABLE_ENV}=1",
            )
            return False, 0
        try:
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, path)  # same folder: atomic
        except OSError as error:
            _unlink(tmp)
            self._write_failed(path, f"neuronsim: cannot write {path}: {error}")
            return False, 0
        except BaseException:
            _unlink(tmp)
            raise
        log.debug("stored %s on disk (%d bytes): %s", graph, len(data), path)
        return True, self.evict()

    def _write_failed(self, path: str, message: str) -> None:
        with _warned_lock:
            reported = path in _unremovable
        if reported:  # the read already warned that this entry is stuck
            log.debug("%s", message)
        else:
            _warn_once(f"write:{self.config.directory}", message)

    # Eviction --------------------------------------------------------------------------------

    def entries(self) -> list[tuple[int, int, str]]:
        """(mtime_ns, size, path) of each entry; removes stale temporary files on the way."""
        found = []
        now = time.time()
        for entry in _scandir(self.config.directory):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if entry.name.endswith(ENTRY_SUFFIX):
                found.append((st.st_mtime_ns, st.st_size, entry.path))
            elif entry.name.startswith(TMP_PREFIX) and now - st.st_mtime > STALE_TMP_SECONDS:
                _unlink(entry.path)
        return found

    def size_bytes(self) -> int:
        return sum(size for _, size, _ in self.entries())

    def evict(self) -> int:
        """Removes least recently used entries until at most max_bytes remain."""
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = 0
        for _, size, path in sorted(entries):
            if total <= self.config.max_bytes:
                break
            try:
                os.unlink(path)
                removed += 1
            except FileNotFoundError:
                pass  # another process evicted it
            except OSError:
                continue
            total -= size
        if removed:
            log.debug("evicted %d disk cache entries (%s)", removed, self.config.directory)
        return removed

    def clear(self) -> int:
        removed = 0
        for entry in _scandir(self.config.directory):
            if entry.name.endswith(ENTRY_SUFFIX) or entry.name.startswith(TMP_PREFIX):
                if _unlink(entry.path) and entry.name.endswith(ENTRY_SUFFIX):
                    removed += 1
        return removed


def active() -> DiskCache | None:
    """The disk cache the environment selects now, or None when disabled."""
    config = config_from_env()
    return DiskCache(config) if config is not None else None


def clear_disk_cache() -> int:
    """Removes every entry of the current disk cache folder; returns how many."""
    cache = active()
    return cache.clear() if cache is not None else 0


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns)


def _file_kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return f"file type {stat.S_IFMT(mode):#o}"


def _describe(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


_REMOVED, _GONE = "removed", "gone"


def _remove_if_same(path: str, identity: tuple[int, ...]) -> str:
    """Removes the file at `path` if it is still the one with `identity` (another process may
    have replaced it with a good entry meanwhile). Returns _REMOVED, _GONE (removed or replaced
    by someone else) or why it could not be removed. A directory is removed only when empty."""
    try:
        if _identity(os.lstat(path)) != identity:
            return _GONE
        if stat.S_ISDIR(identity[2]):
            os.rmdir(path)
        else:
            os.unlink(path)  # a symlink itself, never its target
    except FileNotFoundError:
        return _GONE
    except OSError as error:
        return _describe(error)
    return _REMOVED


def _create_temp(directory: str, key: str) -> tuple[int, str]:
    """A new temporary file in the entry's own folder, so that os.replace is atomic."""
    return tempfile.mkstemp(prefix=f"{TMP_PREFIX}{key[:16]}-", dir=directory)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _scandir(directory: str) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            yield from it
    except OSError:
        return


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False
