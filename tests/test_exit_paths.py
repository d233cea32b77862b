"""Every phase, every way out: Ctrl-C, SIGTERM and a write error each give one line on stderr, a
documented exit code and a snapshot that is whole (the mirror before a failed build kept, a crawl
resumable); a reader that goes away (``| head``) gives no traceback."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import Site
from snapshot_builder import SnapshotBuilder

from archiver.cli import main, snapshot_commands
from archiver.cli.exits import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_STOPPED, EXIT_TERMINATED
from archiver.errors import WriteError
from archiver.export.wacz import export_wacz
from archiver.mirror.build import _Builder, build_mirror
from archiver.stop_signals import Terminated, obey, raised_and_noted
from archiver.store.manifest import Manifest
from archiver.store.snapshot import Snapshot
from archiver.verify.verifier import verify_snapshot
from archiver.warc.cdxj import cdxj_line

PAGES = 3000
"""Pages of the snapshot whose mirror takes long enough to build to be stopped while it runs."""


def archiver(*args: str, file_limit: int | None = None) -> subprocess.Popen[str]:
    def limit_file_size() -> None:
        # Files may not grow past file_limit bytes: a write fails with EFBIG, as on a full disk.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        limit = resource.RLIM_INFINITY if file_limit is None else file_limit
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.Popen(
        [sys.executable, "-m", "archiver", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal gives a command
        preexec_fn=limit_file_size if file_limit else None,
    )


def finished(process: subprocess.Popen[str]) -> tuple[int, list[str]]:
    _, stderr = process.communicate(timeout=300)
    assert "Traceback" not in stderr, stderr
    return process.returncode, stderr.strip().splitlines()


def mirror_files(snapshot: Path) -> list[str]:
    return sorted(str(p.relative_to(snapshot)) for p in (snapshot / "mirror").rglob("*"))


def snapshot_of(root: Path, pages: int, page_bytes: int = 0) -> Path:
    """A snapshot of ``pages`` linked pages, with a crawl.json a resume accepts, and its mirror."""
    snap = SnapshotBuilder(root, seeds=("http://site.test/p0",))
    filler = "x" * page_bytes
    for n in range(pages):
        links = "".join(f'<a href="/p{(n * 7 + k) % pages}">{k}</a>' for k in range(20))
        snap.page(f"http://site.test/p{n}", f"<title>p{n}</title>{links}<p>{filler}</p>")
    root = snap.close()
    done = subprocess.run([sys.executable, "-m", "archiver", "mirror", str(root)], capture_output=True)
    assert done.returncode == 0, done.stderr
    return root


def with_cdxj_index(snapshot: Path) -> Path:
    """``snapshot`` given the CDXJ index a crawl writes: export refuses a snapshot without one."""
    with Manifest.open(snapshot / "manifest.sqlite3", readonly=True) as manifest:
        lines = sorted(
            cdxj_line(
                row.url,
                row.fetched_at or "",
                mime=row.content_type or "",
                status=row.status,
                digest=row.payload_digest or "",
                length=row.warc_length or 0,
                offset=row.warc_offset or 0,
                filename=row.warc_file or "",
            )
            for row in manifest.captures()
        )
    (snapshot / "indexes").mkdir(exist_ok=True)
    (snapshot / "indexes" / "index.cdxj").write_text("".join(line + "\n" for line in lines))
    return snapshot


@pytest.fixture(scope="module")
def big_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return snapshot_of(tmp_path_factory.mktemp("big") / "snap", PAGES)


def stop_while_building(
    command: Sequence[str], snapshot: Path, how: Callable[[int], None]
) -> subprocess.Popen[str]:
    """Run ``archiver command`` and send it ``how`` while its mirror build writes files.

    The command and its build processes are frozen (SIGSTOP) once the first file is there,
    and the signal is sent only if the build is still going; if not, the command runs again:
    on a busy machine this test's own process can be held off the CPU for the whole build.
    """
    building = snapshot / ".mirror.partial"
    for _attempt in range(5):
        process = archiver(*command)
        deadline = time.monotonic() + 120
        while not (building.is_dir() and any(building.iterdir())):
            assert process.poll() is None, "the command ended before its mirror build began"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.killpg(process.pid, signal.SIGSTOP)
        try:
            if building.is_dir():
                how(process.pid)
                return process
        finally:
            os.killpg(process.pid, signal.SIGCONT)
        assert finished(process)[0] == 0
    raise AssertionError("five builds ended before they could be stopped")


SIGNALS = [
    pytest.param(lambda pid: os.killpg(pid, signal.SIGINT), EXIT_INTERRUPTED, "interrupted", id="ctrl-c"),
    pytest.param(lambda pid: os.kill(pid, signal.SIGTERM), EXIT_TERMINATED, "SIGTERM", id="sigterm"),
]


@pytest.mark.parametrize(("how", "code", "word"), SIGNALS)
def test_a_signal_during_archiver_mirror_leaves_the_mirror_before(
    big_snapshot: Path, tmp_path: Path, how: Callable[[int], None], code: int, word: str
) -> None:
    snapshot = tmp_path / "snap"
    subprocess.run(["cp", "-a", str(big_snapshot), str(snapshot)], check=True)
    before = mirror_files(snapshot)
    process = stop_while_building(["mirror", str(snapshot)], snapshot, how)
    returncode, lines = finished(process)
    assert returncode == code, lines
    assert len(lines) == 1 and word in lines[0] and f"archiver mirror {snapshot}" in lines[0], lines
    assert mirror_files(snapshot) == before
    assert not (snapshot / ".mirror.partial").exists()
    again = archiver("mirror", str(snapshot))
    assert finished(again)[0] == 0


@pytest.mark.parametrize(("how", "code", "signal_name"), [
    pytest.param(lambda pid: os.killpg(pid, signal.SIGINT), EXIT_INTERRUPTED, "SIGINT", id="ctrl-c"),
    pytest.param(lambda pid: os.kill(pid, signal.SIGTERM), EXIT_TERMINATED, "SIGTERM", id="sigterm"),
])  # fmt: skip
def test_a_signal_during_the_mirror_pass_of_a_crawl_leaves_it_resumable(
    big_snapshot: Path, tmp_path: Path, how: Callable[[int], None], code: int, signal_name: str
) -> None:
    """The crawl's last mirror pass runs to its end; the stop asked meanwhile is noted, the crawl
    says so, and its resume finishes."""
    snapshot = tmp_path / "snap"
    subprocess.run(["cp", "-a", str(big_snapshot), str(snapshot)], check=True)
    # Nothing left to fetch: the crawl goes to its last mirror pass.
    process = stop_while_building(["crawl", "--resume", str(snapshot), "--quiet"], snapshot, how)
    returncode, lines = finished(process)
    assert returncode == code, lines
    assert len(lines) == 1, lines
    assert f"crawl stopped (signal {signal_name}); continue it with: archiver crawl --resume" in lines[0]
    assert not (snapshot / ".mirror.partial").exists()
    assert mirror_files(snapshot)
    again = archiver("crawl", "--resume", str(snapshot), "--quiet")
    assert finished(again)[0] == 0


def _dev_full(relative: str) -> Callable[[Path], None]:
    """Writes to ``relative`` in the snapshot fail as on a full disk (ENOSPC): it leads to /dev/full."""

    def prepare(snapshot: Path) -> None:
        (snapshot / relative).parent.mkdir(parents=True, exist_ok=True)
        os.symlink("/dev/full", snapshot / relative)

    return prepare


def _cdxj_to_merge(snapshot: Path) -> None:
    """The index a resumed crawl merges its lines into, and a disk too full to write the result."""
    (snapshot / "indexes").mkdir(exist_ok=True)
    (snapshot / "indexes" / "index.cdxj").write_text('site,test)/p0 20260102030405 {"url": "x"}\n')
    _dev_full("indexes/index.tmp")(snapshot)


LIMIT = 500_000
"""Bytes a file may grow to in the cases that limit them: past a page (see below), not the manifest."""


@pytest.mark.parametrize(
    ("command", "prepare", "file_limit", "word"),
    [
        pytest.param(["mirror"], None, LIMIT, "/mirror/site.test/p", id="mirror-file"),
        pytest.param(["mirror"], _dev_full(".index.html.tmp"), None, "index.html", id="mirror-index"),
        pytest.param(["crawl", "--resume"], _dev_full("crawl.json.tmp"), None, "crawl.json", id="crawl-json"),
        pytest.param(["crawl", "--resume"], _cdxj_to_merge, None, "index.cdxj", id="cdxj-merge"),
        pytest.param(["crawl", "--resume"], None, LIMIT, "/mirror/site.test/p", id="crawl-mirror-phase"),
    ],
)
def test_a_write_error_in_each_phase_is_one_line_and_leaves_a_snapshot_to_resume(
    tmp_path: Path,
    command: list[str],
    prepare: Callable[[Path], None] | None,
    file_limit: int | None,
    word: str,
) -> None:
    snapshot = snapshot_of(tmp_path / "snap", 10, page_bytes=2 * LIMIT)  # each page file past the limit
    before = mirror_files(snapshot)
    if prepare is not None:
        prepare(snapshot)
    quiet = ["--quiet"] if command[0] == "crawl" else []
    returncode, lines = finished(archiver(*command, str(snapshot), *quiet, file_limit=file_limit))
    assert returncode == EXIT_STOPPED, lines
    assert len(lines) == 1 and word in lines[0], lines
    assert lines[0].startswith(("archiver: error: ", "archiver: crawl stopped (write error: ")), lines
    assert mirror_files(snapshot) == before
    assert not (snapshot / ".mirror.partial").exists()
    for leftover in snapshot.rglob("*"):
        if leftover.is_symlink():
            leftover.unlink()  # the disk has room again
    again = archiver(*command, str(snapshot), *quiet)
    assert finished(again)[0] == 0
    assert mirror_files(snapshot) == before  # built again, the same


async def test_a_disk_full_as_the_crawl_makes_its_manifest_stops_it_resumably(
    site: Site, tmp_path: Path
) -> None:
    """Too full even for the manifest's first pages: a write error (3), not bad input, and a
    resume that finishes, not one refused for a manifest with no table."""
    site.page("/", links=[f"/p{n}" for n in range(20)])
    for n in range(20):
        site.page(f"/p{n}")
    seed = await site.start()
    snapshot = tmp_path / "snap"
    full = archiver("crawl", seed, "-o", str(snapshot), "--quiet", file_limit=20_000)
    returncode, lines = await asyncio.to_thread(finished, full)
    assert returncode == EXIT_STOPPED, lines
    assert len(lines) == 1 and "manifest" in lines[0] and "crawl --resume" in lines[0], lines
    again = archiver("crawl", "--resume", str(snapshot), "--quiet")
    assert (await asyncio.to_thread(finished, again))[0] == 0
    assert site.hits["/p19"] == 1


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.parametrize(("how", "code", "word"), SIGNALS)
def test_a_signal_during_verify_says_one_line(
    big_snapshot: Path, how: Callable[[int], None], code: int, word: str
) -> None:
    """The signal reaches the whole process group: verify's process checking the mirror too,
    which printed a traceback of its own before verify's line."""
    for _attempt in range(5):
        process = archiver("verify", str(big_snapshot))
        while not _children(process.pid) and process.poll() is None:
            time.sleep(0.005)
        os.killpg(process.pid, signal.SIGSTOP)  # the signal comes while the mirror is checked
        try:
            checking = bool(_children(process.pid))
            if checking:
                how(process.pid)
        finally:
            os.killpg(process.pid, signal.SIGCONT)
        returncode, lines = finished(process)
        if checking:
            break
    assert returncode == code, lines
    assert len(lines) == 1 and word in lines[0], lines


def swallowed(stop: signal.Signals) -> None:
    """``stop`` reaches this process while a library's bare ``except:`` runs (warcio decodes every
    header line of a record inside one): what the signal's handler raised is caught there."""
    with contextlib.suppress(BaseException):  # as ``except: pass`` does
        signal.raise_signal(stop)


WORK_OVER_SNAPSHOTS = [
    pytest.param(lambda snapshot, elsewhere: build_mirror(snapshot), id="mirror"),
    pytest.param(lambda snapshot, elsewhere: verify_snapshot(snapshot), id="verify"),
    pytest.param(lambda snapshot, elsewhere: export_wacz(snapshot, elsewhere / "s.wacz"), id="export"),
]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("work", WORK_OVER_SNAPSHOTS)
def test_a_stop_that_a_library_swallowed_is_obeyed(
    big_snapshot: Path, tmp_path: Path, work: Callable[[Path, Path], object], stop: signal.Signals
) -> None:
    """A SIGTERM met in warcio's header decoding let ``archiver mirror`` build to the end and exit 0."""
    snapshot = tmp_path / "snap"
    subprocess.run(["cp", "-a", str(big_snapshot), str(snapshot)], check=True)
    with_cdxj_index(snapshot)
    mirror = (snapshot / "mirror").stat().st_ino
    with raised_and_noted():
        swallowed(stop)
        with pytest.raises(KeyboardInterrupt if stop == signal.SIGINT else Terminated):
            work(snapshot, tmp_path)
    assert (snapshot / "mirror").stat().st_ino == mirror  # the mirror before, not a new one
    assert not (snapshot / ".mirror.partial").exists() and not (tmp_path / "s.wacz").exists()


class StoppedInAFinalizer:
    """An object whose finalizer is running as SIGTERM comes (verify's mirror check closes a
    multiprocessing connection in one)."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGTERM)


def test_a_stop_met_in_a_finalizer_is_obeyed_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Python cannot raise out of a __del__: it printed the Terminated with a traceback
    ("Exception ignored in"), beside the command's one line."""
    with raised_and_noted():
        StoppedInAFinalizer()  # collected at once
        with pytest.raises(Terminated):
            obey()
    assert capsys.readouterr().err == ""


def test_a_stop_that_no_step_met_again_ends_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """main()'s last look: a command that swallowed a stop and went on to its end exits as stopped."""

    def diff_that_swallows(args: object) -> int:
        swallowed(signal.SIGTERM)
        return 0

    monkeypatch.setattr(snapshot_commands, "cmd_diff", diff_that_swallows)
    assert main(["diff", str(tmp_path), str(tmp_path)]) == EXIT_TERMINATED
    assert "stopped by SIGTERM" in capsys.readouterr().err


def test_a_reader_that_goes_away_gets_no_traceback(big_snapshot: Path) -> None:
    process = archiver("verify", str(big_snapshot), "--json")
    assert process.stdout is not None
    process.stdout.close()  # as `| head` does once it has its lines: nobody reads the rest
    _, stderr = process.communicate(timeout=300)
    assert stderr == ""
    assert process.returncode == EXIT_BROKEN_PIPE


def test_a_full_disk_while_a_wacz_is_written_is_a_write_error(tmp_path: Path) -> None:
    snapshot = with_cdxj_index(snapshot_of(tmp_path / "snap", 10))
    target = tmp_path / "snap.wacz"
    # The WACZ may not grow past 4 KB: its WARC file alone is larger.
    returncode, lines = finished(archiver("export", str(snapshot), "--wacz", str(target), file_limit=4096))
    assert returncode == EXIT_STOPPED, lines
    assert len(lines) == 1 and lines[0].startswith(f"archiver: error: cannot write {target}"), lines
    assert list(tmp_path.glob("*.wacz*")) == []  # neither a part-written WACZ nor its temporary file
    assert finished(archiver("export", str(snapshot), "--wacz", str(target)))[0] == 0


def test_a_full_disk_met_by_the_log_of_a_mirror_process_is_a_write_error(
    big_snapshot: Path, tmp_path: Path
) -> None:
    # Each build process logs the files it wrote, and its last lines go out as it ends: a full
    # disk there raised a bare OSError, which a forked process printed as a traceback.
    snapshot = tmp_path / "snap"
    shutil.copytree(big_snapshot, snapshot, symlinks=True)
    root = tmp_path / ".mirror.partial"
    root.mkdir()
    os.symlink("/dev/full", tmp_path / ".mirror.partial-files-1.jsonl")
    with Manifest.open(snapshot / "manifest.sqlite3") as manifest:
        builder = _Builder(Snapshot(snapshot), manifest)
        builder.plan()
        write = builder.files.write

        def fills_the_disk(*args: Any) -> None:  # a few files fit (their log lines wait in its buffer)
            if len(list(root.rglob("*.html"))) >= 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            write(*args)

        builder.files.write = fills_the_disk
        try:
            with pytest.raises(
                WriteError,
                match=r"cannot write \S+/\.mirror\.partial-files-1\.jsonl: No space left on device",
            ):
                builder.build(root, part=1, parts=2)
        finally:
            builder.files.close()


def test_ctrl_c_while_the_command_line_loads_says_one_line(tmp_path: Path) -> None:
    """The ``archiver`` command imports its command line in a third of a second, in which Ctrl-C
    printed a traceback of the import: here it comes while the crawl command's module loads."""
    interrupting = (
        "import signal, sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'archiver.cli.crawl_command':\n"
        "            signal.raise_signal(signal.SIGINT)\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from archiver.__main__ import run\n"
        "sys.exit(run())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", interrupting, "crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr.splitlines()) == (
        EXIT_INTERRUPTED,
        ["archiver: interrupted (Ctrl-C)"],
    )
    assert not (tmp_path / "s").exists()
