"""SSH signatures: what ssh-keygen signs verifies, what it must not verify does not, and allowed_signers lines."""

from __future__ import annotations

import base64
import contextlib
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sshsig.binary_io import ssh_read_string_pair
from sshsig.sshsig import SshsigSignature, ssh_enarmor_sshsig

from specbench.errors import InputError, UsageError
from specbench.sshsig import (
    NAMESPACE,
    SignatureFormatError,
    SshSignature,
    UnsupportedHashError,
    UnsupportedKeyError,
    load_allowed_signers,
    match_pattern_list,
    parse,
    sign,
    verifies,
)
from specbench.sshsig.allowed import parse_line, parse_time

MESSAGE = b'{"format_version": 1, "algorithm": "sha256", "files": {}}\n'
SSH_KEYGEN = shutil.which("ssh-keygen")
needs_ssh_keygen = pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen (OpenSSH) is not installed")
KEYGEN_TYPES = {
    "ed25519": ["-t", "ed25519"],
    "ecdsa-p256": ["-t", "ecdsa", "-b", "256"],
    "ecdsa-p384": ["-t", "ecdsa", "-b", "384"],
    "ecdsa-p521": ["-t", "ecdsa", "-b", "521"],
    "rsa": ["-t", "rsa", "-b", "2048"],
}
ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICOHLENFumdCD1leCVLSUyjYOJxKeLSH/1QUu9nK99uS"
ECDSA = (
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBMnbedUpdDb4djZbvT2foZ7S9G542qSnxT1VguR5"
    "QoSF47SsYWEjLAfUg2oQUJA6o9fKYlE30A0kUnbdbhUeNvY="
)
"""Public keys as ssh-keygen writes them (test data: reading allowed_signers needs no OpenSSH)."""


def _keygen(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    assert SSH_KEYGEN is not None
    return subprocess.run([SSH_KEYGEN, *args], input=stdin, capture_output=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A private key file of each kind, made by ssh-keygen (its public key next to it, .pub)."""
    if SSH_KEYGEN is None:
        pytest.skip("ssh-keygen (OpenSSH) is not installed")
    folder = tmp_path_factory.mktemp("openssh")
    out = {}
    for kind, args in KEYGEN_TYPES.items():
        path = folder / f"id_{kind}"
        assert _keygen("-q", *args, "-N", "", "-C", f"{kind}@test", "-f", str(path)).returncode == 0
        out[kind] = path
    return out


@pytest.fixture
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """ssh-keygen without a terminal to ask a passphrase on, as in CI (a test must not wait for a person)."""
    run: Callable[..., Any] = subprocess.run

    def detached(*args: Any, **kwargs: Any) -> Any:
        return run(*args, **kwargs, stdin=subprocess.DEVNULL, start_new_session=True)

    monkeypatch.setattr("specbench.sshsig.keygen.subprocess.run", detached)


def _public(key: Path) -> str:
    return " ".join(key.with_suffix(".pub").read_text().split()[:2])


def _edit(text: bytes, change: Callable[[SshsigSignature], object]) -> bytes:
    """The signature with one field changed by `change` (the signature bytes stay those of the original)."""
    outer = SshsigSignature.from_armored(text)
    change(outer)
    return outer.to_armored().encode()


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


@needs_ssh_keygen
@pytest.mark.parametrize("kind", sorted(KEYGEN_TYPES))
def test_what_ssh_keygen_signs_verifies_and_a_changed_message_does_not(kind: str, keys: dict[str, Path]) -> None:
    signature = parse(sign(MESSAGE, keys[kind]))
    assert signature.namespace == NAMESPACE and signature.hash_algorithm == "sha512"
    assert signature.key.openssh() == _public(keys[kind])
    assert verifies(signature, MESSAGE)
    assert not verifies(signature, MESSAGE + b" ")
    assert not verifies(signature, MESSAGE[:-1])


@needs_ssh_keygen
@pytest.mark.parametrize("kind", ["ed25519", "ecdsa-p256", "rsa"])
def test_a_sha256_signature_verifies(kind: str, keys: dict[str, Path], tmp_path: Path) -> None:
    message = tmp_path / "manifest.json"
    message.write_bytes(MESSAGE)
    result = _keygen("-q", "-Y", "sign", "-n", NAMESPACE, "-O", "hashalg=sha256", "-f", str(keys[kind]), str(message))
    assert result.returncode == 0, result.stderr
    signature = parse((tmp_path / "manifest.json.sig").read_bytes())
    assert signature.hash_algorithm == "sha256" and verifies(signature, MESSAGE)


@needs_ssh_keygen
def test_another_namespace_does_not_verify(keys: dict[str, Path]) -> None:
    for_git = sign(MESSAGE, keys["ed25519"], namespace="git")
    assert parse(for_git).namespace == "git" and not verifies(parse(for_git), MESSAGE)
    relabelled = _edit(for_git, lambda outer: setattr(outer, "namespace", NAMESPACE.encode()))
    assert parse(relabelled).namespace == NAMESPACE and not verifies(parse(relabelled), MESSAGE)


@needs_ssh_keygen
def test_another_key_does_not_verify(keys: dict[str, Path]) -> None:
    """A signature whose key is swapped for another (a forger's claim to be someone else) fails."""
    other = base64.b64decode(_public(keys["rsa"]).split()[1])
    claimed = _edit(sign(MESSAGE, keys["ed25519"]), lambda outer: setattr(outer, "public_key", other))
    with pytest.raises(UnsupportedKeyError, match="ssh-ed25519"):
        verifies(parse(claimed), MESSAGE)
    second = _keygen("-q", "-t", "ed25519", "-N", "", "-f", str(keys["ed25519"].with_name("id_other")))
    assert second.returncode == 0
    other = base64.b64decode(_public(keys["ed25519"].with_name("id_other")).split()[1])
    claimed = _edit(sign(MESSAGE, keys["ed25519"]), lambda outer: setattr(outer, "public_key", other))
    assert not verifies(parse(claimed), MESSAGE)


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"not a signature\n",
        b"-----BEGIN SSH SIGNATURE-----\n!!!!\n-----END SSH SIGNATURE-----\n",
        b"-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n",
        b"-----BEGIN SSH SIGNATURE-----\n"
        + base64.b64encode(b"XXXXXX" + b"\x00" * 30)
        + b"\n-----END SSH SIGNATURE-----\n",
        b"-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n",
        b"\xff" * 10,
        b"-----BEGIN SSH SIGNATURE-----\n\xff\xfe\n-----END SSH SIGNATURE-----\n",
        b"x" * 70_000,
    ],
)
def test_malformed_armor_or_blob_is_refused(text: bytes) -> None:
    with pytest.raises(SignatureFormatError):
        parse(text)


@needs_ssh_keygen
def test_trailing_data_truncation_and_other_versions_are_refused(keys: dict[str, Path]) -> None:
    blob = bytes(SshsigSignature.from_armored(sign(MESSAGE, keys["ed25519"])))
    with pytest.raises(SignatureFormatError, match="trailing"):
        parse(ssh_enarmor_sshsig(blob + b"\x00").encode())
    with pytest.raises(SignatureFormatError, match="truncated"):
        parse(ssh_enarmor_sshsig(blob[:-1]).encode())
    with pytest.raises(SignatureFormatError, match="version"):
        parse(ssh_enarmor_sshsig(blob[:6] + (2).to_bytes(4, "big") + blob[10:]).encode())


@needs_ssh_keygen
def test_armor_is_read_as_strictly_as_ssh_keygen_reads_it(keys: dict[str, Path]) -> None:
    """A valid signature inside broken armor is refused, as ssh-keygen refuses it."""
    text = sign(MESSAGE, keys["ed25519"])
    assert verifies(parse(b"\n" + text + b"\n"), MESSAGE)
    lines = text.splitlines(keepends=True)
    for broken, expected in [
        (b"junk\n" + text, "first line"),
        (b"".join(lines[:-1]), "last line"),
        (b"".join([lines[0], b"!" + lines[1], *lines[2:]]), "base64"),
    ]:
        with pytest.raises(SignatureFormatError, match=expected):
            parse(broken)


@needs_ssh_keygen
def test_an_unsupported_hash_or_sha1_rsa_signature_is_refused(keys: dict[str, Path]) -> None:
    md5 = _edit(sign(MESSAGE, keys["ed25519"]), lambda outer: setattr(outer, "hash_algo", b"md5"))
    with pytest.raises(UnsupportedHashError, match="md5"):
        parse(md5)
    rsa = sign(MESSAGE, keys["rsa"])
    _, raw = ssh_read_string_pair(SshsigSignature.from_armored(rsa).signature)
    sha1 = _edit(rsa, lambda outer: setattr(outer, "signature", _string(b"ssh-rsa") + _string(raw)))
    with pytest.raises(UnsupportedKeyError, match="ssh-rsa"):
        verifies(parse(sha1), MESSAGE)


@needs_ssh_keygen
def test_a_security_key_or_mismatched_signature_algorithm_is_refused(keys: dict[str, Path]) -> None:
    sk_key = _string(b"sk-ssh-ed25519@openssh.com") + _string(b"\x01" * 32) + _string(b"ssh:")
    text = _edit(sign(MESSAGE, keys["ed25519"]), lambda outer: setattr(outer, "public_key", sk_key))
    with pytest.raises(UnsupportedKeyError, match="sk-ssh-ed25519"):
        verifies(parse(text), MESSAGE)
    _, raw = ssh_read_string_pair(SshsigSignature.from_armored(sign(MESSAGE, keys["ed25519"])).signature)
    relabelled = _edit(sign(MESSAGE, keys["ed25519"]), lambda outer: setattr(outer, "signature", _string(b"x") + raw))
    with pytest.raises(SignatureFormatError):
        verifies(parse(relabelled), MESSAGE)


def test_a_signature_in_the_wrong_namespace_never_verifies() -> None:
    line = parse_line(f"a {ED25519}", 1)
    assert line is not None
    assert not verifies(SshSignature(line.key, "git", "sha512", b"", b""), MESSAGE)


@needs_ssh_keygen
def test_signing_refuses_unusable_keys_clearly(keys: dict[str, Path], tmp_path: Path, no_terminal: None) -> None:
    encrypted = tmp_path / "id_encrypted"
    assert _keygen("-q", "-t", "ed25519", "-N", "a passphrase", "-f", str(encrypted)).returncode == 0
    with pytest.raises(UsageError, match="encrypted with a passphrase"):
        sign(MESSAGE, encrypted)
    shared = tmp_path / "id_shared"
    shutil.copy(keys["ed25519"], shared)
    shared.chmod(0o644)
    with pytest.raises(UsageError, match="chmod 600"):
        sign(MESSAGE, shared)
    junk = tmp_path / "junk"
    junk.write_text("hello\n")
    junk.chmod(0o600)
    with pytest.raises(UsageError, match="not an SSH private key"):
        sign(MESSAGE, junk)
    with pytest.raises(UsageError, match="cannot read"):
        sign(MESSAGE, tmp_path / "missing")


def test_signing_without_openssh_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("specbench.sshsig.keygen.shutil.which", lambda name: None)
    with pytest.raises(UsageError, match="openssh-client") as caught:
        sign(MESSAGE, tmp_path / "id_ed25519")
    assert "\n" not in str(caught.value)


# allowed_signers


def test_allowed_signers_lines_parse_like_openssh() -> None:
    plain = parse_line(f"alice@example.org {ED25519} comment", 1)
    assert plain is not None and plain.principals == "alice@example.org" and plain.namespaces is None
    assert plain.key.openssh() == ED25519 and plain.key.fingerprint().startswith("SHA256:")
    optioned = parse_line(
        f'a@x,b@y namespaces="specbench,git",valid-after="20250101",valid-before="20300101Z" {ECDSA}', 2
    )
    assert optioned is not None and optioned.principals == "a@x,b@y" and optioned.namespaces == "specbench,git"
    assert optioned.valid_before == pytest.approx(1893456000.0) and optioned.key.key_type == "ecdsa-sha2-nistp256"
    quoted = parse_line(f'"Alice Example" namespaces="specbench" {ED25519}', 3)
    assert quoted is not None and quoted.principals == "Alice Example"
    assert parse_line("   # a comment", 4) is None and parse_line("", 5) is None and parse_line("  ", 6) is None
    ca = parse_line(f"* cert-authority {ED25519}", 7)
    assert ca is not None and ca.cert_authority


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("alice@example.org", "principals \\[options\\] keytype"),
        ("alice@example.org ssh-ed25519", "principals \\[options\\] keytype"),
        ("alice@example.org ssh-ed25519 !!!", "cannot be decoded"),
        ("alice@example.org frobnicate=1 ssh-ed25519 AAAA", "frobnicate"),
        ('alice@example.org valid-before="tomorrow" KEY', "YYYYMMDD"),
        ('alice@example.org valid-after="20300101",valid-before="20250101" KEY', "valid-before after"),
        ("alice@example.org namespaces=specbench KEY", "namespaces"),
        ('"alice KEY', "quote"),
        ('"alice" ', "principals \\[options\\] keytype"),
        ("alice@example.org ssh-dss AAAA", "key type"),
        (f"alice@example.org ssh-rsa {ED25519.split()[1]}", "ssh-ed25519 blob"),
    ],
)
def test_malformed_allowed_signers_lines_are_refused(line: str, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        parse_line(line.replace("KEY", ED25519), 1)


def test_an_allowed_signers_file_names_the_line_of_each_problem(tmp_path: Path) -> None:
    path = tmp_path / "allowed_signers"
    path.write_text(f"# maintainers\nalice@example.org {ED25519}\nbroken line\n")
    with pytest.raises(InputError) as caught:
        load_allowed_signers(path)
    assert f"{path}:3" in str(caught.value)
    path.write_text(f"# maintainers\nalice@example.org {ED25519}\n\nbob@example.org {ECDSA}\n")
    signers = load_allowed_signers(path)
    assert [s.line for s in signers.signers] == [2, 4]
    alice, bob = signers.signers
    assert signers.for_key(alice.key) == [alice] and signers.for_key(bob.key) == [bob]
    with pytest.raises(InputError, match="cannot read"):
        load_allowed_signers(tmp_path / "missing")


def test_patterns_and_times_follow_openssh() -> None:
    assert match_pattern_list("specbench", "git,spec*")
    assert match_pattern_list("specbench", "?pecbench")
    assert not match_pattern_list("specbench", "*,!specbench")
    assert not match_pattern_list("specbench", "git")
    assert parse_time("20300101Z") == 1893456000.0
    assert parse_time("203001010000Z") == parse_time("20300101000000Z") == 1893456000.0
    assert parse_time("20300101") == time.mktime(time.strptime("20300101", "%Y%m%d"))
    assert parse_time("2030010") is None and parse_time("20301301Z") is None


def _allowed(tmp_path: Path, key: Path, options: str = "") -> Path:
    path = tmp_path / "allowed_signers"
    path.write_text(f"signer@test {options} {_public(key)}\n".replace("  ", " "))
    return path


def _keygen_verify(allowed: Path, signature: Path, message: bytes, namespace: str = NAMESPACE) -> bool:
    result = _keygen(
        "-Y", "verify", "-f", str(allowed), "-I", "signer@test", "-n", namespace, "-s", str(signature), stdin=message
    )
    return result.returncode == 0


@needs_ssh_keygen
@pytest.mark.parametrize(
    ("options", "valid"),
    [
        ("", True),
        ('valid-before="20200101Z"', False),
        ('valid-after="20991231Z"', False),
        ('valid-after="20200101Z",valid-before="20991231Z"', True),
        ('namespaces="git"', False),
        ('namespaces="git,specbench"', True),
        ('namespaces="*,!specbench"', False),
        ("cert-authority", False),
    ],
)
def test_allowed_signers_options_agree_with_ssh_keygen(
    options: str, valid: bool, keys: dict[str, Path], tmp_path: Path
) -> None:
    """Expired, not-yet-valid, other-namespace and certificate-authority lines refuse a signature in both."""
    from specbench.validator.signature import line_allows

    signature = tmp_path / "manifest.json.sig"
    signature.write_bytes(sign(MESSAGE, keys["ed25519"]))
    allowed = _allowed(tmp_path, keys["ed25519"], options)
    assert _keygen_verify(allowed, signature, MESSAGE) is valid
    (line,) = load_allowed_signers(allowed).signers
    assert line_allows(line, time.time()) is valid


def test_the_sign_command_without_openssh_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from specbench.cli import main

    monkeypatch.setattr("specbench.sshsig.keygen.shutil.which", lambda name: None)
    assert main(["sign", str(tmp_path), "-k", str(tmp_path / "id_ed25519")]) == 2
    err = capsys.readouterr().err.strip()
    assert "ssh-keygen" in err and "openssh-client" in err and len(err.splitlines()) == 1


@pytest.fixture(scope="module")
def signed(keys: dict[str, Path]) -> dict[str, bytes]:
    """MESSAGE signed once by each kind of key."""
    return {kind: sign(MESSAGE, key) for kind, key in keys.items()}


@needs_ssh_keygen
@pytest.mark.parametrize("kind", ["ed25519", "ecdsa-p256", "rsa"])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_changed_byte_is_refused_or_fails_never_crashes(
    kind: str, signed: dict[str, bytes], data: st.DataObject
) -> None:
    """Change any byte of the signature blob: parse or verify refuses it with a finding's error, or it fails."""
    blob = bytearray(bytes(SshsigSignature.from_armored(signed[kind])))
    index = data.draw(st.integers(0, len(blob) - 1))
    blob[index] ^= data.draw(st.integers(1, 255))
    with contextlib.suppress(SignatureFormatError):
        assert not verifies(parse(ssh_enarmor_sshsig(bytes(blob)).encode()), MESSAGE)
