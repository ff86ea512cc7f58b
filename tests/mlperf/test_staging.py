"""The staging folder's writer thread: every file on disk after finish(), and its errors raised there; the
importer converting one system while the one before is still being written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from mlperf_support import corpus, tree_digest

from specbench.mlperf import import_results, importer
from specbench.mlperf.convert import convert_system, output_folder
from specbench.mlperf.staging import Staging
from specbench.spec.loader import load_spec
from specbench.validator import validate_submission


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


def test_systems_imported_in_turn_are_as_imported_one_at_a_time(tmp_path: Path) -> None:
    """import_results converts a system while the one before is still being written: the same files and reports."""
    tree = corpus() / "v4.0"
    together = import_results(tree, tmp_path / "together", jobs=1)
    assert len(together.systems) >= 2
    for done in together.systems:
        alone = convert_system(done.imported.source, {"resnet": load_spec("mlperf-resnet50")}, tmp_path / "alone")
        assert alone is not None
        report = validate_submission(alone.output)
        where = {"path": str(alone.output), "root": str(alone.output)}
        assert report.to_dict() == {**done.report.to_dict(), **where}
    assert tree_digest(tmp_path / "together") == tree_digest(tmp_path / "alone")


def test_a_system_failing_leaves_the_one_before_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real, calls = importer.stage_system, []

    def second_fails(*args: object) -> object:
        calls.append(args)
        if len(calls) == 2:
            raise RuntimeError("the second system fails")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(importer, "stage_system", second_fails)
    with pytest.raises(RuntimeError, match="the second system fails"):
        import_results(corpus() / "v4.0", tmp_path / "out", jobs=1)
    first = output_folder(calls[0][0], tmp_path / "out")  # type: ignore[arg-type]
    assert (first / "manifest.json").is_file()
    assert not [p for p in (tmp_path / "out").rglob(".*") if ".import-" in p.name]
