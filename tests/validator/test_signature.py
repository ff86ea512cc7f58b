"""Authenticity findings (SB-SIG-*): one case per code, the report's signer, and `specbench sign` end to end."""

from __future__ import annotations

import base64
import functools
import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mutate import resign
from sshsig.binary_io import ssh_read_string_pair
from sshsig.sshsig import SshsigSignature, ssh_enarmor_sshsig
from validator_bases import Bases

from specbench.cli import main
from specbench.sshsig import AllowedSigners, SshKey, load_allowed_signers, sign
from specbench.validator import CODES, validate_submission
from specbench.validator.integrity import MANIFEST, SIGNATURE_FILE

SSH_KEYGEN = shutil.which("ssh-keygen")
KEY_TYPES = {"alice": ["-t", "ed25519"], "mallory": ["-t", "ed25519"], "rsa": ["-t", "rsa", "-b", "2048"]}
ALICE, MALLORY, RSA_KEY = KEY_TYPES
_KEY_FOLDER = tempfile.TemporaryDirectory(prefix="specbench-test-keys-")


@functools.cache
def _key(name: str, passphrase: str = "") -> Path:
    """The private key file `name`, made by ssh-keygen on first use (the test skips without OpenSSH)."""
    if SSH_KEYGEN is None:
        pytest.skip("ssh-keygen (OpenSSH) is not installed")
    path = Path(_KEY_FOLDER.name) / f"id_{name}{'_encrypted' if passphrase else ''}"
    args = KEY_TYPES.get(name, ["-t", "ed25519"])
    subprocess.run([SSH_KEYGEN, "-q", *args, "-N", passphrase, "-C", name, "-f", str(path)], check=True, timeout=60)
    return path


def _public(name: str) -> SshKey:
    return SshKey.from_blob(base64.b64decode(_key(name).with_suffix(".pub").read_text().split()[1]))


@pytest.fixture
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """ssh-keygen without a terminal to ask a passphrase on, as in CI (a test must not wait for a person)."""
    run: Callable[..., Any] = subprocess.run

    def detached(*args: Any, **kwargs: Any) -> Any:
        return run(*args, **kwargs, stdin=subprocess.DEVNULL, start_new_session=True)

    monkeypatch.setattr("specbench.sshsig.keygen.subprocess.run", detached)


def _sign(root: Path, key: str = ALICE, namespace: str = "specbench") -> None:
    (root / SIGNATURE_FILE).write_bytes(sign((root / MANIFEST).read_bytes(), _key(key), namespace=namespace))


def _signers(tmp_path: Path, options: str = 'namespaces="specbench"', key: str = ALICE) -> AllowedSigners:
    path = tmp_path / "allowed_signers"
    path.write_text(f"# maintainers of the board\nalice@example.org {options} {_public(key).openssh()}\n")
    return load_allowed_signers(path)


def _field_swap(root: Path, hash_algorithm: str | None = None, signature: bytes | None = None) -> None:
    """Rewrite the signature file with its hash name or signature blob replaced."""
    path = root / SIGNATURE_FILE
    outer = SshsigSignature.from_armored(path.read_bytes())
    outer.hash_algo = outer.hash_algo if hash_algorithm is None else hash_algorithm.encode()
    outer.signature = outer.signature if signature is None else signature
    path.write_text(outer.to_armored())


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _sha1_rsa(root: Path) -> None:
    """An RSA signature relabelled ssh-rsa (SHA-1), which OpenSSH's sshsig refuses."""
    _sign(root, RSA_KEY)
    _, raw = ssh_read_string_pair(SshsigSignature.from_armored((root / SIGNATURE_FILE).read_bytes()).signature)
    _field_swap(root, signature=_string(b"ssh-rsa") + _string(raw))


def _tampered(root: Path) -> None:
    """A forgery: change a file, re-write the manifest so integrity holds, keep the old signature."""
    _sign(root)
    result = root / "resnet50" / "run_1" / "result.json"
    result.write_text(result.read_text() + "\n")
    resign(root)


@dataclass
class Case:
    name: str
    mutate: Callable[[Path], object]
    codes: set[str]
    signers: str | None = 'namespaces="specbench"'
    status: str | None = "invalid"


CASES = [
    Case("verified", _sign, set(), status="verified"),
    Case("verified without namespaces option", _sign, set(), signers="", status="verified"),
    Case("SIG-001 unsigned", lambda r: None, {"SB-SIG-001"}, status="missing"),
    Case("unsigned, no signers required", lambda r: None, set(), signers=None, status=None),
    Case("SIG-002 garbage", lambda r: (r / SIGNATURE_FILE).write_text("hello\n"), {"SB-SIG-002"}),
    Case(
        "SIG-002 bad base64", lambda r: (r / SIGNATURE_FILE).write_text(ssh_enarmor_sshsig(b"SSHSIG")), {"SB-SIG-002"}
    ),
    Case("SIG-003 tampered and re-manifested", _tampered, {"SB-SIG-003"}),
    Case("SIG-003 without signers", _tampered, {"SB-SIG-003"}, signers=None),
    Case("SIG-004 namespace", lambda r: _sign(r, namespace="git"), {"SB-SIG-004"}),
    Case("SIG-005 other key", lambda r: _sign(r, MALLORY), {"SB-SIG-005"}),
    Case("SIG-005 not for this namespace", _sign, {"SB-SIG-005"}, signers='namespaces="git"'),
    Case("SIG-006 expired", _sign, {"SB-SIG-006"}, signers='valid-before="20200101Z"'),
    Case("SIG-006 not yet valid", _sign, {"SB-SIG-006"}, signers='valid-after="20991231Z"'),
    Case("SIG-007 not verified", _sign, {"SB-SIG-007"}, signers=None, status="not verified"),
    Case("SIG-008 hash", lambda r: (_sign(r), _field_swap(r, hash_algorithm="md5")), {"SB-SIG-008"}),
    Case("SIG-008 sha1 rsa", _sha1_rsa, {"SB-SIG-008"}, signers=None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_signature_case_gives_exact_codes(case: Case, bases: Bases, tmp_path: Path) -> None:
    root = bases.copy(tmp_path)
    case.mutate(root)
    signers = None if case.signers is None else _signers(tmp_path, case.signers)
    report = validate_submission(root, signers=signers)
    assert report.codes() == case.codes, [f"{f.code} {f.location} {f.message}" for f in report.findings]
    assert (report.signature.status if report.signature else None) == case.status
    assert report.compliant() is not any(CODES[c].severity == "error" for c in case.codes)
    for finding in report.findings:
        assert "expected" in finding.message and finding.hint


def test_every_signature_code_has_a_case() -> None:
    covered = {code for case in CASES for code in case.codes}
    assert covered == {code for code in CODES if code.startswith("SB-SIG-")}


def test_the_report_says_who_signed(bases: Bases, tmp_path: Path) -> None:
    root = bases.copy(tmp_path)
    _sign(root)
    report = validate_submission(root, signers=_signers(tmp_path))
    assert report.signature is not None and report.signature.signer == "alice@example.org"
    assert report.signature.fingerprint == _public(ALICE).fingerprint()
    data = report.to_dict()["signature"]
    assert data["status"] == "verified" and data["key_type"] == "ssh-ed25519"
    one_benchmark = validate_submission(root / "resnet50", signers=_signers(tmp_path))
    assert one_benchmark.codes() == set() and one_benchmark.signature == report.signature


def test_the_manifest_never_lists_its_signature(bases: Bases, tmp_path: Path) -> None:
    root = bases.copy(tmp_path)
    _sign(root)
    resign(root)  # write_manifest again, as the executor would: the signature stays out of it
    assert SIGNATURE_FILE not in json.loads((root / MANIFEST).read_text())["files"]
    manifest = json.loads((root / MANIFEST).read_text())
    manifest["files"][SIGNATURE_FILE] = {"sha256": "0" * 64, "bytes": 1}
    (root / MANIFEST).write_text(json.dumps(manifest))
    assert "SB-STR-005" in validate_submission(root).codes()


def test_sign_then_validate_through_the_cli(
    bases: Bases, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = bases.copy(tmp_path)
    key = _key(ALICE)
    assert main(["sign", str(root / "resnet50"), "--key", str(key)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {root / SIGNATURE_FILE}" in out and _public(ALICE).openssh() in out
    assert (root / SIGNATURE_FILE).stat().st_mode & 0o777 == 0o644
    allowed = _signers(tmp_path).path
    assert main(["validate", str(root), "--allowed-signers", allowed, "--jobs", "1"]) == 0
    assert "signed by alice@example.org" in capsys.readouterr().out
    assert main(["validate", str(root), "--jobs", "1", "--werror"]) == 1
    assert "SB-SIG-007" in capsys.readouterr().out
    (tmp_path / "bad_signers").write_text("alice@example.org ssh-ed25519\n")
    assert main(["validate", str(root), "--allowed-signers", str(tmp_path / "bad_signers")]) == 2
    assert f"{tmp_path / 'bad_signers'}:1" in capsys.readouterr().err


def test_score_ranks_only_allowed_signers(bases: Bases, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    signed = bases.copy(tmp_path / "a")
    unsigned = bases.copy(tmp_path / "b")
    _sign(signed)
    allowed = _signers(tmp_path).path
    assert (
        main(["score", str(signed), str(unsigned), "--format", "json", "--allowed-signers", allowed, "--jobs", "1"])
        == 0
    )
    text = capsys.readouterr().out
    assert "SB-SIG-001" in text and str(unsigned) in text


def test_sign_refuses_bad_keys_and_broken_manifests(
    bases: Bases, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_terminal: None
) -> None:
    root = bases.copy(tmp_path)
    encrypted = _key(ALICE, passphrase="secret")
    assert main(["sign", str(root), "--key", str(encrypted)]) == 2
    assert "encrypted with a passphrase" in capsys.readouterr().err
    key = _key(ALICE)
    (root / "resnet50" / "submission.yaml").write_text((root / "resnet50" / "submission.yaml").read_text() + "\n")
    assert main(["sign", str(root), "--key", str(key)]) == 2
    assert "does not match the files" in capsys.readouterr().err and not (root / SIGNATURE_FILE).exists()
    assert main(["sign", str(tmp_path / "nowhere"), "--key", str(key)]) == 2
    assert "expected an ORG/SYSTEM folder" in capsys.readouterr().err


@pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen (OpenSSH) is not installed")
def test_a_manifest_signed_by_ssh_keygen_validates(bases: Bases, tmp_path: Path) -> None:
    """ssh-keygen -Y sign on the submission: verified for its key, refused for another key or namespace."""
    assert SSH_KEYGEN is not None
    root = bases.copy(tmp_path / "sub")
    key = tmp_path / "id_ed25519"
    run = functools.partial(subprocess.run, capture_output=True, timeout=60, check=True)
    run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", "carol@example.org", "-f", str(key)])
    run([SSH_KEYGEN, "-q", "-Y", "sign", "-f", str(key), "-n", "specbench", str(root / MANIFEST)])
    public = " ".join(key.with_suffix(".pub").read_text().split()[:2])
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f'carol@example.org namespaces="specbench" {public}\n')
    report = validate_submission(root, signers=load_allowed_signers(allowed))
    assert report.codes() == set() and report.signature is not None
    assert report.signature.signer == "carol@example.org"
    assert validate_submission(root, signers=_signers(tmp_path)).codes() == {"SB-SIG-005"}
    run([SSH_KEYGEN, "-q", "-Y", "sign", "-f", str(key), "-n", "git", str(root / MANIFEST)], input=b"y\n")
    assert validate_submission(root, signers=load_allowed_signers(allowed)).codes() == {"SB-SIG-004"}
