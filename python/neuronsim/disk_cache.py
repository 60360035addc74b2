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
  compiling the same graph both write whole entries and the last rename wins.
- A read checks the magic, the header, the key, the payload's length and sha256, and the
  versions: the compiler version, the program format version and the build (sha256 of the
  native module). A corrupted or truncated entry gives one warning, an entry of another
  version or build one warning per process; either way it is removed and the graph recompiled.
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
_PREFIX = struct.Struct("<8sI")


class CacheWarning(UserWarning):
    """A disk compile-cache entry that could not be used (it is removed and recompiled)."""


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


class _Invalid(Exception):
    def __init__(self, reason: str, other_version: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.other_version = other_version


@dataclass(frozen=True)
class LoadResult:
    program: Any | None
    invalid: bool = False  # an unusable entry was found (and removed)


class DiskCache:
    """The entries of one folder. Methods never raise for I/O problems: they warn and go on."""

    def __init__(self, config: DiskConfig) -> None:
        self.config = config

    def path(self, key: str) -> str:
        return os.path.join(self.config.directory, key + ENTRY_SUFFIX)

    # Reading ---------------------------------------------------------------------------------

    def load(self, key: str) -> LoadResult:
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                identity = _identity(os.fstat(f.fileno()))
                data = f.read()
        except (FileNotFoundError, NotADirectoryError):
            return LoadResult(None)  # not cached (or no cache folder: store() says so)
        except OSError as error:
            _warn_once(f"read:{self.config.directory}", f"neuronsim: cannot read {path}: {error}")
            return LoadResult(None)
        try:
            program = self._decode(key, data)
        except _Invalid as invalid:
            self._remove_invalid(path, identity, invalid)
            return LoadResult(None, invalid=True)
        try:
            os.utime(path)  # least recently used = oldest mtime
        except OSError:
            pass
        return LoadResult(program)

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
        except ValueError as error:
            raise _Invalid(f"unreadable header ({error})") from None
        versions = _versions()
        for name, expected in versions.items():
            if header.get(name) != expected:
                raise _Invalid(
                    f"{name} {header.get(name)!r}, this neuronsim has {expected!r}",
                    other_version=True,
                )
        if header.get("key") != key:
            raise _Invalid(f"it holds key {str(header.get('key'))[:16]}...")
        payload = memoryview(data)[header_end:]
        if len(payload) != header.get("payload_bytes"):
            raise _Invalid(
                f"truncated: payload of {len(payload)} bytes, expected "
                f"{header.get('payload_bytes')}"
            )
        if hashlib.sha256(payload).hexdigest() != header.get("payload_sha256"):
            raise _Invalid("checksum mismatch")
        lib = native.lib()
        try:
            return lib.Program.from_bytes(bytes(payload))
        except (ValueError, RuntimeError) as error:  # FormatError is a ValueError
            raise _Invalid(f"unreadable program ({error})") from None

    def _remove_invalid(self, path: str, identity: tuple[int, ...], invalid: _Invalid) -> None:
        # Remove only the file we read: another process may have replaced it meanwhile.
        try:
            if _identity(os.stat(path)) == identity:
                os.remove(path)
        except OSError:
            pass
        if invalid.other_version:
            _warn_once(
                f"version:{self.config.directory}",
                f"neuronsim: the disk compile cache {self.config.directory} holds programs of "
                f"another neuronsim version or build ({invalid.reason}); they are removed and "
                "recompiled as they are found",
            )
        else:
            _warn_once(
                f"corrupt:{path}:{identity}",
                f"neuronsim: disk compile cache entry {path} is corrupted ({invalid.reason}); "
                "removed it and recompiling",
            )

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
        if len(data) > self.config.max_bytes:
            log.debug("not storing %s on disk: %d bytes exceed %s", graph, len(data), MAX_MB_ENV)
            return False, 0
        directory = self.config.directory
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{key[:16]}-", dir=directory)
        except OSError as error:
            _warn_once(
                f"write:{directory}",
                f"neuronsim: cannot write the disk compile cache in {directory} ({error}); "
                f"set {CACHE_DIR_ENV} to a writable folder or {DISABLE_ENV}=1",
            )
            return False, 0
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.path(key))
        except OSError as error:
            _unlink(tmp)
            _warn_once(f"write:{directory}", f"neuronsim: cannot write {self.path(key)}: {error}")
            return False, 0
        except BaseException:
            _unlink(tmp)
            raise
        log.debug("stored %s on disk (%d bytes): %s", graph, len(data), self.path(key))
        return True, self.evict()

    # Eviction --------------------------------------------------------------------------------

    def entries(self) -> list[tuple[int, int, str]]:
        """(mtime_ns, size, path) of each entry; removes stale temporary files on the way."""
        found = []
        now = time.time()
        for entry in _scandir(self.config.directory):
            try:
                st = entry.stat()
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
                os.remove(path)
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
                removed += entry.name.endswith(ENTRY_SUFFIX)
                _unlink(entry.path)
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
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _scandir(directory: str) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            yield from it
    except OSError:
        return


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
