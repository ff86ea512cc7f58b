"""SSHSIG in Python: round trips, refusals, allowed_signers parsing, and interoperability with ssh-keygen."""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from specbench.errors import InputError, UsageError
from specbench.sshsig import (
    NAMESPACE,
    SignatureFormatError,
    UnsupportedHashError,
    UnsupportedKeyError,
    key_of,
    load_allowed_signers,
    load_private_key,
    match_pattern_list,
    parse,
    sign,
    verifies,
)
from specbench.sshsig.allowed import parse_line, parse_time
from specbench.sshsig.keys import PrivateKey
from specbench.sshsig.signature import MAGIC, armor, dearmor
from specbench.sshsig.wire import Reader, put_string, put_u32

MESSAGE = b'{"format_version": 1, "algorithm": "sha256", "files": {}}\n'
MAKERS: dict[str, Callable[[], PrivateKey]] = {
    "ed25519": ed25519.Ed25519PrivateKey.generate,
    "ecdsa-p256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "ecdsa-p384": lambda: ec.generate_private_key(ec.SECP384R1()),
    "rsa": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
}
SSH_KEYGEN = shutil.which("ssh-keygen")
needs_ssh_keygen = pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen (OpenSSH) is not installed")


@pytest.fixture(scope="module")
def keys() -> dict[str, PrivateKey]:
    return {name: make() for name, make in MAKERS.items()}


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_a_signature_verifies_and_a_changed_message_does_not(kind: str, keys: dict[str, PrivateKey]) -> None:
    signature = parse(sign(MESSAGE, keys[kind]).encode())
    assert signature.namespace == NAMESPACE and signature.hash_algorithm == "sha512"
    assert signature.key == key_of(keys[kind].public_key())
    assert verifies(signature, MESSAGE)
    assert not verifies(signature, MESSAGE + b" ")


def test_the_namespace_is_part_of_what_is_signed(keys: dict[str, PrivateKey]) -> None:
    signature = parse(sign(MESSAGE, keys["ed25519"], namespace="git").encode())
    assert signature.namespace == "git" and verifies(signature, MESSAGE)
    relabelled = _rebuild(sign(MESSAGE, keys["ed25519"], namespace="git"), namespace="specbench")
    assert not verifies(parse(relabelled.encode()), MESSAGE)


def _rebuild(
    text: str, namespace: str | None = None, hash_algorithm: str | None = None, sig: bytes | None = None
) -> str:
    """Re-armor a signature with one field replaced (the signature bytes stay those of the original)."""
    reader = Reader(dearmor(text.encode()), "test")
    reader.raw(6)
    reader.u32()
    key, ns, reserved, alg, signature = reader.string(), reader.text(), reader.string(), reader.text(), reader.string()
    blob = MAGIC + put_u32(1) + put_string(key) + put_string(namespace or ns) + put_string(reserved)
    return armor(blob + put_string(hash_algorithm or alg) + put_string(sig if sig is not None else signature))


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
        b"x" * 70_000,
    ],
)
def test_malformed_armor_or_blob_is_refused(text: bytes) -> None:
    with pytest.raises(SignatureFormatError):
        parse(text)


def test_trailing_data_and_other_versions_are_refused(keys: dict[str, PrivateKey]) -> None:
    blob = dearmor(sign(MESSAGE, keys["ed25519"]).encode())
    with pytest.raises(SignatureFormatError, match="trailing"):
        parse(armor(blob + b"\x00").encode())
    with pytest.raises(SignatureFormatError, match="version"):
        parse(armor(blob[:6] + put_u32(2) + blob[10:]).encode())


def test_an_unsupported_hash_or_sha1_rsa_signature_is_refused(keys: dict[str, PrivateKey]) -> None:
    with pytest.raises(UnsupportedHashError, match="md5"):
        parse(_rebuild(sign(MESSAGE, keys["ed25519"]), hash_algorithm="md5").encode())
    good = parse(sign(MESSAGE, keys["rsa"]).encode())
    raw = Reader(good.signature, "t")
    raw.text()
    sha1 = parse(_rebuild(sign(MESSAGE, keys["rsa"]), sig=put_string("ssh-rsa") + put_string(raw.string())).encode())
    with pytest.raises(UnsupportedKeyError, match="ssh-rsa"):
        verifies(sha1, MESSAGE)


def _private_file(tmp_path: Path, key: PrivateKey, name: str = "id") -> Path:
    path = tmp_path / name
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    )
    return path


def test_private_keys_load_and_bad_files_are_clear_errors(tmp_path: Path, keys: dict[str, PrivateKey]) -> None:
    for kind, key in keys.items():
        loaded = load_private_key(_private_file(tmp_path, key, kind))
        assert key_of(loaded.public_key()) == key_of(key.public_key())
    encrypted = tmp_path / "encrypted"
    encrypted.write_bytes(
        keys["ed25519"].private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"passphrase"),
        )
    )
    with pytest.raises(UsageError, match="encrypted with a passphrase"):
        load_private_key(encrypted)
    (tmp_path / "junk").write_text("hello\n")
    with pytest.raises(UsageError, match="not an SSH private key"):
        load_private_key(tmp_path / "junk")
    with pytest.raises(UsageError, match="cannot read"):
        load_private_key(tmp_path / "missing")


def _line(key: PrivateKey, prefix: str = "alice@example.org") -> str:
    return f"{prefix} {key_of(key.public_key()).openssh()} comment"


def test_allowed_signers_lines_parse_like_openssh(keys: dict[str, PrivateKey]) -> None:
    key = keys["ed25519"]
    plain = parse_line(_line(key), 1)
    assert plain is not None and plain.principals == "alice@example.org" and plain.namespaces is None
    optioned = parse_line(
        _line(key, 'a@x,b@y namespaces="specbench,git",valid-after="20250101",valid-before="20300101Z"'), 2
    )
    assert optioned is not None and optioned.principals == "a@x,b@y" and optioned.namespaces == "specbench,git"
    assert optioned.valid_before == pytest.approx(1893456000.0)
    quoted = parse_line(_line(key, '"Alice Example" namespaces="specbench"'), 3)
    assert quoted is not None and quoted.principals == "Alice Example"
    assert parse_line("   # a comment", 4) is None and parse_line("", 5) is None
    ca = parse_line(_line(key, "* cert-authority"), 6)
    assert ca is not None and ca.cert_authority


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("alice@example.org", "found only"),
        ("alice@example.org ssh-ed25519 !!!", "cannot be decoded"),
        ("alice@example.org frobnicate=1 ssh-ed25519 AAAA", "expected options"),
        ('alice@example.org valid-before="tomorrow" KEY', "YYYYMMDD"),
        ('alice@example.org valid-after="20300101",valid-before="20250101" KEY', "valid-before after"),
        ("alice@example.org namespaces=specbench KEY", 'namespaces="..."'),
        ('"alice KEY', "closing double quote"),
        ("alice@example.org ssh-dss AAAA", "key type"),
    ],
)
def test_malformed_allowed_signers_lines_are_refused(line: str, expected: str, keys: dict[str, PrivateKey]) -> None:
    with pytest.raises(ValueError, match=expected):
        parse_line(line.replace("KEY", key_of(keys["ed25519"].public_key()).openssh()), 1)


def test_an_allowed_signers_file_names_the_line_of_each_problem(tmp_path: Path, keys: dict[str, PrivateKey]) -> None:
    path = tmp_path / "allowed_signers"
    path.write_text(f"# maintainers\n{_line(keys['ed25519'])}\nbroken line\n")
    with pytest.raises(InputError) as caught:
        load_allowed_signers(path)
    assert f"{path}:3" in str(caught.value)
    path.write_text(f"# maintainers\n{_line(keys['ed25519'])}\n")
    signers = load_allowed_signers(path)
    assert [s.line for s in signers.signers] == [2]
    assert signers.for_key(key_of(keys["ed25519"].public_key())) and not signers.for_key(
        key_of(keys["rsa"].public_key())
    )
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


# Interoperability with the real ssh-keygen.

KEYGEN_TYPES = {"ed25519": ["-t", "ed25519"], "ecdsa": ["-t", "ecdsa", "-b", "256"], "rsa": ["-t", "rsa", "-b", "2048"]}


def _keygen(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    assert SSH_KEYGEN is not None
    return subprocess.run([SSH_KEYGEN, *args], input=stdin, capture_output=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def openssh_keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if SSH_KEYGEN is None:
        pytest.skip("ssh-keygen (OpenSSH) is not installed")
    folder = tmp_path_factory.mktemp("openssh")
    out = {}
    for kind, args in KEYGEN_TYPES.items():
        path = folder / f"id_{kind}"
        assert _keygen("-q", *args, "-N", "", "-C", f"{kind}@test", "-f", str(path)).returncode == 0
        out[kind] = path
    return out


def _allowed(tmp_path: Path, key: Path, options: str = "") -> Path:
    public = key.with_suffix(".pub").read_text().split()
    path = tmp_path / "allowed_signers"
    path.write_text(f"signer@test {options} {public[0]} {public[1]}\n".replace("  ", " "))
    return path


def _keygen_verify(allowed: Path, signature: Path, message: bytes, namespace: str = NAMESPACE) -> bool:
    result = _keygen(
        "-Y", "verify", "-f", str(allowed), "-I", "signer@test", "-n", namespace, "-s", str(signature), stdin=message
    )
    return result.returncode == 0


@needs_ssh_keygen
@pytest.mark.parametrize("kind", sorted(KEYGEN_TYPES))
def test_ssh_keygen_verifies_what_specbench_signs(kind: str, openssh_keys: dict[str, Path], tmp_path: Path) -> None:
    key = openssh_keys[kind]
    signature = tmp_path / "manifest.json.sig"
    signature.write_text(sign(MESSAGE, load_private_key(key)))
    allowed = _allowed(tmp_path, key)
    assert _keygen_verify(allowed, signature, MESSAGE)
    assert not _keygen_verify(allowed, signature, MESSAGE + b" ")
    assert not _keygen_verify(allowed, signature, MESSAGE, namespace="git")


@needs_ssh_keygen
@pytest.mark.parametrize("kind", sorted(KEYGEN_TYPES))
def test_specbench_verifies_what_ssh_keygen_signs(kind: str, openssh_keys: dict[str, Path], tmp_path: Path) -> None:
    message = tmp_path / "manifest.json"
    message.write_bytes(MESSAGE)
    result = _keygen("-q", "-Y", "sign", "-f", str(openssh_keys[kind]), "-n", NAMESPACE, str(message))
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "manifest.json.sig").read_bytes()
    signature = parse(text)
    assert verifies(signature, MESSAGE) and not verifies(signature, MESSAGE[:-1])
    public = openssh_keys[kind].with_suffix(".pub").read_text().split()
    assert signature.key.openssh() == f"{public[0]} {public[1]}"
    if kind == "ed25519":  # deterministic signatures: specbench writes the same bytes
        assert sign(MESSAGE, load_private_key(openssh_keys[kind])).encode() == text


@needs_ssh_keygen
@pytest.mark.parametrize(
    ("options", "valid"),
    [
        ('valid-before="20200101Z"', False),
        ('valid-after="20991231Z"', False),
        ('valid-after="20200101Z",valid-before="20991231Z"', True),
        ('namespaces="git"', False),
        ('namespaces="git,specbench"', True),
    ],
)
def test_allowed_signers_options_agree_with_ssh_keygen(
    options: str, valid: bool, openssh_keys: dict[str, Path], tmp_path: Path
) -> None:
    """Expired, not-yet-valid and other-namespace lines refuse a signature in both implementations."""
    from specbench.validator.signature import line_allows

    key = openssh_keys["ed25519"]
    signature = tmp_path / "manifest.json.sig"
    signature.write_text(sign(MESSAGE, load_private_key(key)))
    allowed = _allowed(tmp_path, key, options)
    assert _keygen_verify(allowed, signature, MESSAGE) is valid
    (line,) = load_allowed_signers(allowed).signers
    assert line_allows(line, time.time()) is valid


@needs_ssh_keygen
def test_an_encrypted_openssh_key_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "id_encrypted"
    assert _keygen("-q", "-t", "ed25519", "-N", "a passphrase", "-f", str(path)).returncode == 0
    with pytest.raises(UsageError, match="encrypted with a passphrase"):
        load_private_key(path)
