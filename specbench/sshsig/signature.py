"""OpenSSH file signatures (PROTOCOL.sshsig, `ssh-keygen -Y sign`), written and verified in Python.

An armored signature holds the signer's public key, a namespace that says what the signature
is for, the hash algorithm, and the key's signature over
`"SSHSIG" || string(namespace) || string("") || string(hash algorithm) || string(H(message))`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from specbench.sshsig.keys import PrivateKey, SshKey, key_of, sign_blob, verify_blob
from specbench.sshsig.wire import Reader, WireError, put_string, put_u32

MAGIC = b"SSHSIG"
VERSION = 1
BEGIN = "-----BEGIN SSH SIGNATURE-----"
END = "-----END SSH SIGNATURE-----"
HASHES = {"sha512": hashlib.sha512, "sha256": hashlib.sha256}
DEFAULT_HASH = "sha512"
NAMESPACE = "specbench"
"""The namespace specbench signs submission manifests in (`ssh-keygen -Y ... -n specbench`)."""
MAX_SIGNATURE_BYTES = 64 * 1024
LINE_WIDTH = 70


class SignatureFormatError(WireError):
    """A signature file that is not an armored SSHSIG signature this module reads."""


class UnsupportedHashError(SignatureFormatError):
    """A well-formed signature whose hash algorithm OpenSSH does not allow (only sha256 and sha512)."""


@dataclass(frozen=True)
class SshSignature:
    """The fields of an SSHSIG blob."""

    key: SshKey
    namespace: str
    hash_algorithm: str
    signature: bytes


def signed_data(namespace: str, hash_algorithm: str, message: bytes) -> bytes:
    """The bytes the key signs for `message` in `namespace`."""
    digest = HASHES[hash_algorithm](message).digest()
    return MAGIC + put_string(namespace) + put_string(b"") + put_string(hash_algorithm) + put_string(digest)


def sign(message: bytes, private: PrivateKey, namespace: str = NAMESPACE, hash_algorithm: str = DEFAULT_HASH) -> str:
    """An armored signature of `message`, byte for byte what `ssh-keygen -Y sign -n NAMESPACE` writes."""
    if not namespace:
        raise ValueError("a signature needs a namespace")
    key = key_of(private.public_key())
    blob = (
        MAGIC
        + put_u32(VERSION)
        + put_string(key.blob)
        + put_string(namespace)
        + put_string(b"")
        + put_string(hash_algorithm)
        + put_string(sign_blob(private, signed_data(namespace, hash_algorithm, message)))
    )
    return armor(blob)


def armor(blob: bytes) -> str:
    text = base64.b64encode(blob).decode()
    lines = [text[i : i + LINE_WIDTH] for i in range(0, len(text), LINE_WIDTH)]
    return "\n".join([BEGIN, *lines, END]) + "\n"


def dearmor(text: bytes) -> bytes:
    """The blob inside an armored signature; SignatureFormatError when the armor is broken."""
    if len(text) > MAX_SIGNATURE_BYTES:
        raise SignatureFormatError(f"expected at most {MAX_SIGNATURE_BYTES} bytes, found {len(text)}")
    try:
        lines = text.decode("ascii").strip().splitlines()
    except UnicodeDecodeError as err:
        raise SignatureFormatError("expected ASCII armor, found other bytes") from err
    if not lines or lines[0].strip() != BEGIN:
        raise SignatureFormatError(f"expected the first line {BEGIN!r}, found {lines[0][:40] if lines else ''!r}")
    if lines[-1].strip() != END:
        raise SignatureFormatError(f"expected the last line {END!r}, found {lines[-1][:40]!r}")
    try:
        return base64.b64decode("".join(line.strip() for line in lines[1:-1]), validate=True)
    except (binascii.Error, ValueError) as err:
        raise SignatureFormatError(f"expected base64 between the armor lines: {err}") from err


def parse(text: bytes) -> SshSignature:
    """The fields of an armored signature; SignatureFormatError when it is malformed."""
    try:
        reader = Reader(dearmor(text), "signature blob")
        if reader.raw(len(MAGIC)) != MAGIC:
            raise SignatureFormatError("expected the SSHSIG magic preamble, found other bytes")
        version = reader.u32()
        if version != VERSION:
            raise SignatureFormatError(f"expected signature version {VERSION}, found {version}")
        key = SshKey.from_blob(reader.string())
        namespace = reader.text()
        reader.string()  # reserved
        hash_algorithm = reader.text()
        signature = reader.string()
        reader.end()
    except SignatureFormatError:
        raise
    except WireError as err:
        raise SignatureFormatError(str(err)) from err
    if hash_algorithm not in HASHES:
        raise UnsupportedHashError(f"expected hash algorithm sha512 or sha256, found {hash_algorithm!r}")
    return SshSignature(key, namespace, hash_algorithm, signature)


def verifies(signature: SshSignature, message: bytes) -> bool:
    """Whether the signature's key signed `message` in the signature's own namespace.

    The caller compares the namespace with the one it expects; raises UnsupportedKeyError or
    WireError (from keys.verify_blob) when the key or signature cannot be checked.
    """
    data = signed_data(signature.namespace, signature.hash_algorithm, message)
    return verify_blob(signature.key, signature.signature, data)
