"""The staging folder's writer thread: every file on disk after finish(), and its errors raised there."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from specbench.mlperf.staging import Staging


@pytest.mark.parametrize("background", [False, True])
def test_files_and_manifest_are_on_disk_after_finish(tmp_path: Path, background: bool) -> None:
    staging = Staging(tmp_path, background=background)
    payloads = {f"run_{i}/log.txt": f"line {i}\n".encode() * (i + 1) for i in range(50)}
    for rel, data in payloads.items():
        staging.write(rel, data)
    staging.manifest()
    staging.finish()
    assert {rel: (tmp_path / rel).read_bytes() for rel in payloads} == payloads
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["files"]["run_3/log.txt"] == {
        "sha256": hashlib.sha256(payloads["run_3/log.txt"]).hexdigest(),
        "bytes": len(payloads["run_3/log.txt"]),
    }


def test_an_error_of_the_writer_thread_is_raised_by_finish(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file where a folder must go")
    staging = Staging(tmp_path, background=True)
    staging.write("taken/run_1/log.txt", b"x")
    staging.write("later.txt", b"y")  # not written once the writer has failed
    with pytest.raises((FileExistsError, NotADirectoryError)):
        staging.finish()
    assert not (tmp_path / "later.txt").exists()


def test_a_file_written_twice_is_refused_at_once(tmp_path: Path) -> None:
    staging = Staging(tmp_path, background=True)
    staging.write("a.txt", b"1")
    with pytest.raises(FileExistsError, match="written twice"):
        staging.write("a.txt", b"2")
    staging.finish()
    assert (tmp_path / "a.txt").read_bytes() == b"1"
