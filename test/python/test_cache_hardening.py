"""Disk compile cache against hostile entries: whatever sits at an entry's path (a FIFO, a device,
a directory, a symlink, a huge sparse file, garbage, a file that cannot be read or removed),
compilation never blocks or fails, gives at most one CacheWarning that tells the truth about
what was removed, and matches eager. Also the writer: a full or read-only cache folder, and two
processes compiling the same graph over a corrupted entry at once."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import signal
import stat
import struct
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import neuronsim
from models import MLP, relative_error
from neuronsim import disk_cache
from neuronsim.disk_cache import CacheWarning

HERE = Path(__file__).resolve().parent
# A cache entry that blocks is a bug; a compile of the test MLP takes a few seconds.
DEADLINE_S = 30.0


class Blocked(BaseException):
    """Raised by the deadline; a BaseException so that no `except OSError` can swallow it."""


@contextlib.contextmanager
def _deadline(seconds: float = DEADLINE_S) -> Iterator[None]:
    """Fails the test if the block runs longer than `seconds`: SIGALRM interrupts a blocking
    open() or read() with Blocked. Restores pytest-timeout's own timer afterwards."""

    def on_alarm(signum, frame):
        raise Blocked(f"blocked for more than {seconds} s")

    start = time.monotonic()
    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    old_remaining, old_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except Blocked as blocked:
        pytest.fail(str(blocked))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_remaining > 0:
            left = max(old_remaining - (time.monotonic() - start), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, old_interval)


@contextlib.contextmanager
def _memory_cap(extra_bytes: int = 4 << 30) -> Iterator[None]:
    """Caps this process's address space at its current size + `extra_bytes`, so that a cache
    that reads /dev/zero or a 64 GiB sparse file raises MemoryError instead of pulling the
    machine into the OOM killer."""
    with open("/proc/self/statm") as f:
        current = int(f.read().split()[0]) * resource.getpagesize()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = current + extra_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _entries() -> list[Path]:
    return sorted(Path(disk_cache.config_from_env().directory).glob("*.nprog"))


def _input(batch: int = 3) -> torch.Tensor:
    return torch.linspace(-2.0, 2.0, batch * 40).reshape(batch, 40)


def _compile(model: MLP) -> list[str]:
    """Compiles and runs `model` as a new process would (nothing in memory), within the deadline;
    checks the output against eager and returns the messages of the CacheWarnings raised."""
    torch._dynamo.reset()
    neuronsim.reset()
    x = _input()
    with warnings.catch_warnings(record=True) as caught, _deadline(), _memory_cap():
        warnings.simplefilter("always")
        with torch.no_grad():
            actual = torch.compile(model, backend="neuron", dynamic=False)(x)
    with torch.no_grad():
        assert relative_error(actual, model(x)) <= 1e-5
    return [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


@pytest.fixture
def model() -> MLP:
    return MLP(40, 50, 6)


@pytest.fixture
def entry(model) -> Path:
    """The path of the model's disk cache entry, after a first compile wrote it."""
    _compile(model)
    (path,) = _entries()
    return path


def _assert_valid_entry(path: Path) -> None:
    assert stat.S_ISREG(path.lstat().st_mode)
    loaded = disk_cache.active().load(path.stem)
    assert loaded.program is not None and not loaded.invalid


def _assert_recompiled_from_scratch() -> None:
    stats = neuronsim.cache_stats()
    assert stats["compiles"] == 1 and stats["disk_hits"] == 0


# Files that are not regular files: never opened for reading, removed, recompiled. -------------


def _make_fifo(path: Path) -> None:
    os.mkfifo(path)


def _make_symlink_to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _make_symlink_to_fifo(path: Path) -> None:
    os.mkfifo(path.with_name("fifo"))
    path.symlink_to(path.with_name("fifo"))


def _make_symlink_to_valid_entry(path: Path) -> None:
    # Even a link to a good entry is not followed: the cache only writes regular files.
    path.symlink_to(path.with_name("elsewhere"))


def _make_empty_directory(path: Path) -> None:
    path.mkdir()


def _make_char_device(path: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # the numbers of /dev/zero
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (_make_fifo, "a FIFO"),
        (_make_symlink_to_dev_zero, "a symbolic link"),
        (_make_symlink_to_fifo, "a symbolic link"),
        (_make_symlink_to_valid_entry, "a symbolic link"),
        (_make_empty_directory, "a directory"),
        (_make_char_device, "a character device"),
    ],
    ids=["fifo", "symlink-dev-zero", "symlink-fifo", "symlink-entry", "empty-dir", "char-device"],
)
def test_non_regular_entry_never_blocks_is_removed_and_recompiled(model, entry, make, kind):
    elsewhere, good = entry.with_name("elsewhere"), entry.read_bytes()
    entry.rename(elsewhere)  # the good entry, kept out of the way
    make(entry)
    messages = _compile(model)
    assert len(messages) == 1, messages
    assert f"is corrupted (not a regular file: {kind})" in messages[0]
    assert "removed it and recompiling" in messages[0]
    _assert_recompiled_from_scratch()
    assert neuronsim.cache_stats()["disk_invalid"] == 1
    _assert_valid_entry(entry)  # replaced by a regular file
    # A link's target is never touched.
    assert elsewhere.read_bytes() == good
    if (entry.parent / "fifo").exists():
        assert stat.S_ISFIFO((entry.parent / "fifo").lstat().st_mode)


def test_huge_sparse_entry_is_not_read_and_is_removed(model, entry):
    with open(entry, "r+b") as f:
        f.truncate(64 << 30)  # 64 GiB of holes: no disk used, far above any plausible entry
    messages = _compile(model)
    assert len(messages) == 1, messages
    assert "is corrupted (68719476736 bytes, more than the" in messages[0]
    assert "removed it and recompiling" in messages[0]
    _assert_recompiled_from_scratch()
    _assert_valid_entry(entry)
    assert entry.stat().st_size < 1 << 20


def test_entry_larger_than_the_cache_cap_is_treated_as_corrupt(model, entry, monkeypatch):
    size = entry.stat().st_size
    # Half the entry's size: the recompiled program (whose header may differ by a few
    # bytes) is over the cap as well, so nothing is written back.
    monkeypatch.setenv("NEURONSIM_CACHE_MAX_MB", str((size // 2) / (1024 * 1024)))
    messages = _compile(model)
    assert len(messages) == 1 and f"({size} bytes, more than the" in messages[0], messages
    assert not entry.exists()  # removed, and the new program is too big for the cap as well
    assert neuronsim.cache_stats()["disk_writes"] == 0


# Regular files with bad contents. --------------------------------------------------------------


def _with_header(data: bytes, header_bytes: bytes, payload: bytes | None = None) -> bytes:
    _, size = struct.unpack_from("<8sI", data)
    payload = data[12 + size :] if payload is None else payload
    return struct.pack("<8sI", disk_cache.MAGIC, len(header_bytes)) + header_bytes + payload


def _header(data: bytes) -> dict:
    _, size = struct.unpack_from("<8sI", data)
    return json.loads(data[12 : 12 + size])


def _deeply_nested_header(data: bytes) -> bytes:
    return _with_header(data, b"[" * 100_000 + b"]" * 100_000)


def _header_with_wrong_types(data: bytes) -> bytes:
    header = _header(data)
    header.update(payload_bytes="many", payload_sha256=["not", "a", "digest"])
    return _with_header(data, json.dumps(header).encode())


def _valid_checksum_garbage_payload(data: bytes) -> bytes:
    import hashlib

    payload = b"\xff\x00garbage" * 20
    header = _header(data)
    header.update(payload_bytes=len(payload), payload_sha256=hashlib.sha256(payload).hexdigest())
    return _with_header(data, json.dumps(header).encode(), payload)


def _header_length_past_the_end(data: bytes) -> bytes:
    return struct.pack("<8sI", disk_cache.MAGIC, 0xFFFFFFFF) + data[12:]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda data: b"", "truncated: 0 bytes"),
        (lambda data: data[:5], "truncated: 5 bytes"),
        (lambda data: data[:-1], "truncated: payload of"),
        (lambda data: os.urandom(len(data)), "bad magic"),
        (_header_length_past_the_end, "truncated header"),
        (_deeply_nested_header, "unreadable header"),
        (_header_with_wrong_types, "truncated: payload of"),
        (_valid_checksum_garbage_payload, "unreadable program"),
    ],
    ids=[
        "empty",
        "5-bytes",
        "one-byte-short",
        "random",
        "header-past-end",
        "nested-json",
        "wrong-types",
        "garbage-program",
    ],
)
def test_garbage_or_truncated_entry_warns_once_and_recompiles(model, entry, damage, reason):
    entry.write_bytes(damage(entry.read_bytes()))
    messages = _compile(model)
    assert len(messages) == 1, messages
    assert "is corrupted (" in messages[0] and reason in messages[0]
    assert "removed it and recompiling" in messages[0]
    _assert_recompiled_from_scratch()
    _assert_valid_entry(entry)


# Entries that cannot be read or removed: compile proceeds, the warning says so. ----------------


def test_unremovable_entry_says_it_was_not_removed(model, entry):
    # A non-empty directory at the entry path: unlink fails, rmdir fails, rename over it fails.
    entry.unlink()
    entry.mkdir()
    (entry / "something").write_text("not ours")
    messages = _compile(model)
    assert len(messages) == 1, messages  # no second warning from the writer
    assert "is corrupted (not a regular file: a directory)" in messages[0]
    assert "could not remove it" in messages[0] and "removed it and" not in messages[0]
    _assert_recompiled_from_scratch()
    assert (entry / "something").read_text() == "not ours"
    assert neuronsim.cache_stats()["disk_writes"] == 0
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no temporary file left
    # The next process warns again (the entry is still there) and still runs.
    assert len(_compile(model)) == 1


def test_removal_refused_says_it_was_not_removed(model, entry, monkeypatch):
    entry.write_bytes(b"garbage" * 10)
    real_unlink, real_remove = os.unlink, os.remove

    def refuse(real):
        def call(path, *args, **kwargs):
            if str(path).endswith(disk_cache.ENTRY_SUFFIX):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real(path, *args, **kwargs)

        return call

    monkeypatch.setattr(os, "unlink", refuse(real_unlink))
    monkeypatch.setattr(os, "remove", refuse(real_remove))
    messages = _compile(model)
    assert len(messages) == 1, messages
    assert "is corrupted (not a neuronsim cache entry (bad magic))" in messages[0]
    assert "could not remove it (" in messages[0] and "Permission denied" in messages[0]
    assert "removed it and" not in messages[0]
    _assert_recompiled_from_scratch()


def test_unreadable_entry_is_skipped_with_a_warning(model, entry, monkeypatch):
    real_open = os.open

    def refuse(path, flags, *args, **kwargs):
        if str(path).endswith(disk_cache.ENTRY_SUFFIX) and not flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    messages = _compile(model)
    assert len(messages) == 1 and "cannot read" in messages[0], messages
    assert "Permission denied" in messages[0]
    _assert_recompiled_from_scratch()
    assert neuronsim.cache_stats()["disk_writes"] == 1  # the writer replaced it
    monkeypatch.setattr(os, "open", real_open)
    _assert_valid_entry(entry)


# The writer: a full or read-only cache folder. --------------------------------------------------


@pytest.mark.parametrize(
    ("stage", "error", "text"),
    [
        ("_write_all", errno.ENOSPC, "No space left on device"),
        ("_create_temp", errno.EROFS, "Read-only file system"),
        ("_create_temp", errno.EACCES, "Permission denied"),
    ],
    ids=["full", "read-only-fs", "no-permission"],
)
def test_failed_write_warns_once_and_leaves_no_temporary_file(
    model, monkeypatch, stage, error, text
):
    def fail(*args) -> None:
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(disk_cache, stage, fail)
    for batch in (3, 4):  # two graphs, two failed writes, one warning
        x = _input(batch)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.no_grad():
                out = torch.compile(model, backend="neuron", dynamic=False)(x)
                assert relative_error(out, model(x)) <= 1e-5
        messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
        assert len(messages) == (1 if batch == 3 else 0), messages
        if messages:
            assert "cannot write" in messages[0] and text in messages[0]
    stats = neuronsim.cache_stats()
    assert stats["compiles"] == 2 and stats["disk_writes"] == 0
    directory = Path(disk_cache.config_from_env().directory)
    assert list(directory.iterdir()) == []  # the temporary files were removed


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder anyway")
def test_read_only_cache_folder_warns_once(model, tmp_path, monkeypatch):
    root = tmp_path / "cache"
    (root / disk_cache.SUBDIR).mkdir(parents=True)
    monkeypatch.setenv("NEURONSIM_CACHE_DIR", str(root))
    (root / disk_cache.SUBDIR).chmod(0o555)
    try:
        messages = _compile(model)
    finally:
        (root / disk_cache.SUBDIR).chmod(0o755)
    assert len(messages) == 1 and "cannot write the disk compile cache" in messages[0]


# Two processes at once over a corrupted entry. --------------------------------------------------

_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time, warnings
    sys.path.insert(0, {here!r})
    import torch, neuronsim
    from models import MLP, relative_error
    warnings.simplefilter("always")
    torch.manual_seed(0)
    model = MLP(40, 50, 6)
    x = torch.linspace(-2.0, 2.0, 120).reshape(3, 40)
    while time.time() < float(os.environ["START_AT"]):
        time.sleep(0.001)
    with torch.no_grad():
        out = torch.compile(model, backend="neuron", dynamic=False)(x)
        error = relative_error(out, model(x))
    stats = neuronsim.cache_stats()
    print(json.dumps({{"error": error, "compiles": stats["compiles"],
                      "disk_hits": stats["disk_hits"], "sum": float(out.sum())}}))
    """
).format(here=str(HERE))


def test_two_processes_over_a_corrupted_entry_both_succeed(entry):
    entry.write_bytes(b"NSIMPRG\x00" + b"\xff" * 64)
    env = {**os.environ, "START_AT": str(time.time() + 5.0)}  # both start at the same moment
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _SCRIPT],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "Traceback" not in err, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["error"] <= 1e-5 for r in results)
    assert results[0]["sum"] == results[1]["sum"]
    assert all(r["compiles"] + r["disk_hits"] == 1 for r in results)
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no temporary files
    _assert_valid_entry(entry)
