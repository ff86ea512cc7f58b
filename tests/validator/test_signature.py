"""Authenticity findings (SB-SIG-*): one case per code, the report's signer, and `specbench sign` end to end."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from mutate import resign
from validator_bases import Bases

from specbench.cli import main
from specbench.sshsig import AllowedSigners, key_of, load_allowed_signers, parse, sign
from specbench.sshsig.keys import PrivateKey
from specbench.sshsig.signature import armor, dearmor
from specbench.sshsig.wire import Reader, put_string, put_u32
from specbench.validator import CODES, validate_submission
from specbench.validator.integrity import MANIFEST, SIGNATURE_FILE

ALICE = ed25519.Ed25519PrivateKey.generate()
MALLORY = ed25519.Ed25519PrivateKey.generate()
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _sign(root: Path, key: PrivateKey = ALICE, namespace: str = "specbench") -> None:
    (root / SIGNATURE_FILE).write_text(sign((root / MANIFEST).read_bytes(), key, namespace=namespace))


def _signers(tmp_path: Path, options: str = 'namespaces="specbench"', key: PrivateKey = ALICE) -> AllowedSigners:
    path = tmp_path / "allowed_signers"
    path.write_text(f"# maintainers of the board\nalice@example.org {options} {key_of(key.public_key()).openssh()}\n")
    return load_allowed_signers(path)


def _field_swap(root: Path, hash_algorithm: str | None = None, signature: bytes | None = None) -> None:
    """Rewrite the signature file with its hash name or signature blob replaced."""
    path = root / SIGNATURE_FILE
    reader = Reader(dearmor(path.read_bytes()), "test")
    reader.raw(6)
    reader.u32()
    key, namespace, reserved, algorithm, blob = (
        reader.string(),
        reader.text(),
        reader.string(),
        reader.text(),
        reader.string(),
    )
    new = b"SSHSIG" + put_u32(1) + put_string(key) + put_string(namespace) + put_string(reserved)
    new += put_string(hash_algorithm or algorithm) + put_string(blob if signature is None else signature)
    path.write_text(armor(new))


def _sha1_rsa(root: Path) -> None:
    """An RSA signature relabelled ssh-rsa (SHA-1), which OpenSSH's sshsig refuses."""
    _sign(root, RSA_KEY)
    inner = Reader(parse((root / SIGNATURE_FILE).read_bytes()).signature, "signature")
    inner.text()
    _field_swap(root, signature=put_string("ssh-rsa") + put_string(inner.string()))


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
    Case("SIG-002 bad base64", lambda r: (r / SIGNATURE_FILE).write_text(armor(b"SSHSIG")), {"SB-SIG-002"}),
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
    assert report.signature.fingerprint == key_of(ALICE.public_key()).fingerprint()
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


def _write_key(path: Path, key: PrivateKey, password: bytes | None = None) -> Path:
    encryption = serialization.NoEncryption() if password is None else serialization.BestAvailableEncryption(password)
    fmt = serialization.PrivateFormat.OpenSSH if password is None else serialization.PrivateFormat.PKCS8
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, fmt, encryption))
    return path


def test_sign_then_validate_through_the_cli(
    bases: Bases, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = bases.copy(tmp_path)
    key = _write_key(tmp_path / "id_ed25519", ALICE)
    assert main(["sign", str(root / "resnet50"), "--key", str(key)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {root / SIGNATURE_FILE}" in out and key_of(ALICE.public_key()).openssh() in out
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
    bases: Bases, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = bases.copy(tmp_path)
    encrypted = _write_key(tmp_path / "id_encrypted", ALICE, password=b"secret")
    assert main(["sign", str(root), "--key", str(encrypted)]) == 2
    assert "encrypted with a passphrase" in capsys.readouterr().err
    key = _write_key(tmp_path / "id_ed25519", ALICE)
    (root / "resnet50" / "submission.yaml").write_text((root / "resnet50" / "submission.yaml").read_text() + "\n")
    assert main(["sign", str(root), "--key", str(key)]) == 2
    assert "does not match the files" in capsys.readouterr().err and not (root / SIGNATURE_FILE).exists()
    assert main(["sign", str(tmp_path / "nowhere"), "--key", str(key)]) == 2
    assert "expected an ORG/SYSTEM folder" in capsys.readouterr().err


SSH_KEYGEN = shutil.which("ssh-keygen")


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
