"""Safe file access: links never followed (even when swapped in after listing), bounded reads, no writes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from mutate import edit_rows, resign, run_dir

from specbench.validator import Limits, validate_submission
from specbench.validator.files import Tree
from specbench.validator.findings import Findings
from specbench.validator.integrity import unsafe_path_reason


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("resnet50/run_1/log.txt", None),
        ("../x", "it holds a '..' segment"),
        ("a/../../x", "it holds a '..' segment"),
        ("/etc/passwd", "it is absolute"),
        ("C:/x", "it is absolute"),
        ("a\\..\\x", "it holds a backslash or NUL character"),
        ("a//b", "it holds an empty or '.' segment"),
        ("./a", "it holds an empty or '.' segment"),
        ("", "it is empty"),
    ],
)
def test_manifest_paths(path: str, reason: str | None) -> None:
    assert unsafe_path_reason(path) == reason


def test_a_link_swapped_in_after_listing_is_not_followed(smoke: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    findings = Findings()
    tree = Tree.scan(smoke, Limits(), findings)
    log = run_dir(smoke) / "log.txt"
    log.unlink()
    log.symlink_to(secret)
    assert tree.read("resnet50/run_1/log.txt") is None
    assert [f.code for f in findings.items] == ["SB-STR-004"]


def test_a_folder_swapped_for_a_link_is_not_followed(smoke: Path, tmp_path: Path) -> None:
    findings = Findings()
    tree = Tree.scan(smoke, Limits(), findings)
    moved = tmp_path / "elsewhere"
    shutil.move(str(smoke / "resnet50"), moved)
    (smoke / "resnet50").symlink_to(moved)
    assert tree.read("resnet50/run_1/log.txt") is None
    assert tree.digest("resnet50/run_1/result.json") is None
    assert {f.code for f in findings.items} == {"SB-STR-004"}


def test_linked_folders_are_reported_and_not_walked(smoke: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("x")
    (smoke / "resnet50" / "run_9").symlink_to(outside)
    (smoke / "resnet50" / "inside").symlink_to(smoke / "resnet50" / "run_1")
    report = validate_submission(smoke)
    messages = {f.location.file: f.message for f in report.findings}
    assert report.codes() == {"SB-STR-004"}
    assert "outside the submission" in messages["resnet50/run_9"]
    assert "inside the submission" in messages["resnet50/inside"]


def test_reads_are_bounded(smoke: Path) -> None:
    report = validate_submission(smoke, limits=Limits(log_bytes=100, csv_bytes=1000))
    over = {f.location.file for f in report.findings if f.code == "SB-STR-003"}
    assert over == {"resnet50/run_1/log.txt", "resnet50/run_1/power.csv"}


def test_bad_bytes_are_located(smoke: Path) -> None:
    system = smoke / "system.yaml"
    system.write_bytes(system.read_bytes().replace(b"box1", b"box\xff1", 1))
    resign(smoke)
    report = validate_submission(smoke)
    (finding,) = [f for f in report.findings if f.code == "SB-STR-006"]
    assert finding.location.file == "system.yaml" and finding.location.line is not None
    assert "byte 0xff" in finding.message


def _snapshot(root: Path) -> dict[str, tuple[str, int, float]]:
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mode, p.stat().st_mtime)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_validation_never_writes(smoke: Path) -> None:
    edit_rows(smoke, lambda rows: rows.insert(5, ["bad"]))
    before = _snapshot(smoke)
    for folder in [smoke, *[p for p in smoke.rglob("*") if p.is_dir()]]:
        folder.chmod(0o555)
    try:
        report = validate_submission(smoke)
    finally:
        for folder in [smoke, *[p for p in smoke.rglob("*") if p.is_dir()]]:
            folder.chmod(0o755)
    assert "SB-PWR-002" in report.codes()
    assert _snapshot(smoke) == before
    assert not any(name.endswith(".tmp") for name in os.listdir(run_dir(smoke)))


def test_a_file_is_opened_once_for_its_digest_and_its_reading(smoke: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest check reads a small file whole; the check that reads it next takes those bytes (no second read)."""
    opened: list[str] = []
    real_open = Tree._open

    def counting(self: Tree, rel: str) -> int:
        opened.append(rel)
        return real_open(self, rel)

    before = validate_submission(smoke).to_dict()
    monkeypatch.setattr(Tree, "_open", counting)
    assert validate_submission(smoke).to_dict() == before
    main_tree = [rel for rel in opened if not rel.endswith(("power.csv", "power.json"))]  # power: a tree of its own
    assert len(main_tree) == len(set(main_tree)), sorted(main_tree)


def test_read_after_digest_gives_the_digested_bytes(smoke: Path) -> None:
    findings = Findings()
    tree = Tree.scan(smoke, Limits(), findings)
    rel = "resnet50/run_1/log.txt"
    data = (smoke / rel).read_bytes()
    assert tree.digest(rel) == (hashlib.sha256(data).hexdigest(), len(data))
    assert tree.read(rel) == data
    assert rel not in tree.kept
    assert tree.read(rel) == data  # read again: from the file
    assert tree.read(rel, limit=10) is None and [f.code for f in findings.items] == ["SB-STR-003"]


def test_what_every_manifest_writer_writes_is_what_the_validator_reads(tmp_path: Path) -> None:
    """manifest.json's writers (write_manifest, the MLPerf importer's staging) share files.manifest_data; the
    validator reads it with formats/manifest.py's model, which takes exactly that form."""
    from specbench.files import manifest_data, write_manifest
    from specbench.formats.manifest import Manifest

    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.txt").write_text("x")
    (tmp_path / "a.txt").write_text("ab")
    written = json.loads(write_manifest(tmp_path).read_text())
    assert Manifest.model_validate(written).model_dump() == written
    assert list(written["files"]) == ["a.txt", "b/x.txt"]
    assert manifest_data({"z": ("0" * 64, 1), "a": ("f" * 64, 2)})["files"] == {
        "a": {"sha256": "f" * 64, "bytes": 2},
        "z": {"sha256": "0" * 64, "bytes": 1},
    }
