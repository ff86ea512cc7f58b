"""Armored SSH signatures (PROTOCOL.sshsig): read and verified by the `sshsig` library, checked as OpenSSH does.

Left to specbench are the checks ssh-keygen makes that the library does not: strict armor, the
hash algorithm (sha512 or sha256 only), no truncated or trailing data, a signature algorithm that
fits the key.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from sshsig import InvalidSignature, check_signature
from sshsig.sshsig import SshsigSignature, SshsigWrapper, ssh_dearmor_sshsig

from specbench.sshsig.keys import (
    CURVES,
    SignatureFormatError,
    SshKey,
    check_key_and_signature,
    check_library_key,
    ecdsa_verifies,
    fields,
)

BEGIN = b"-----BEGIN SSH SIGNATURE-----"
END = b"-----END SSH SIGNATURE-----"
_BASE64 = re.compile(rb"[A-Za-z0-9+/]*={0,2}")
HASHES = ("sha512", "sha256")
NAMESPACE = "specbench"
"""The namespace specbench signs submission manifests in (`ssh-keygen -Y ... -n specbench`)."""
MAX_SIGNATURE_BYTES = 64 * 1024
_FIELDS = 5
"""Public key, namespace, reserved, hash algorithm and signature follow the magic and the version."""


class UnsupportedHashError(SignatureFormatError):
    """A well-formed signature whose hash algorithm OpenSSH does not allow (only sha256 and sha512)."""


@dataclass(frozen=True)
class SshSignature:
    """The fields of an armored signature, and its text as the library verifies it."""

    key: SshKey
    namespace: str
    hash_algorithm: str
    signature: bytes
    text: bytes


def parse(text: bytes) -> SshSignature:
    """The fields of an armored signature; SignatureFormatError when it is malformed."""
    if len(text) > MAX_SIGNATURE_BYTES:
        raise SignatureFormatError(f"expected at most {MAX_SIGNATURE_BYTES} bytes, found {len(text)}")
    _check_armor(text)
    try:
        blob = ssh_dearmor_sshsig(text)
        outer = SshsigSignature(blob)
        namespace, hash_algorithm = outer.namespace.decode("utf-8"), outer.hash_algo.decode("utf-8")
    except (ValueError, NotImplementedError) as err:
        raise SignatureFormatError(str(err) or type(err).__name__) from err
    fields(blob, _FIELDS, "signature blob", start=10)
    if hash_algorithm not in HASHES:
        raise UnsupportedHashError(f"expected hash algorithm sha512 or sha256, found {hash_algorithm!r}")
    return SshSignature(SshKey.from_blob(outer.public_key), namespace, hash_algorithm, outer.signature, text)


def _check_armor(text: bytes) -> None:
    """Refuse what ssh-keygen refuses and the library lets through: text around the armor, or non-base64 in it."""
    body = text.strip()
    if not body.startswith(BEGIN):
        raise SignatureFormatError(f"expected the first line {BEGIN.decode()!r}, found {body[:40]!r}")
    if not body.endswith(END):
        raise SignatureFormatError(f"expected the last line {END.decode()!r}, found {body[-40:]!r}")
    if not _BASE64.fullmatch(b"".join(body[len(BEGIN) : -len(END)].split())):
        raise SignatureFormatError("expected base64 between the armor lines, found other characters")


def verifies(signature: SshSignature, message: bytes) -> bool:
    """Whether the signature's key signed `message` in specbench's namespace.

    Raises UnsupportedKeyError or SignatureFormatError when the key or signature cannot be checked.
    """
    if signature.namespace != NAMESPACE:
        return False
    check_key_and_signature(signature.key, signature.signature)
    if signature.key.key_type in CURVES:
        digest = hashlib.new(signature.hash_algorithm, message).digest()
        wrapper = SshsigWrapper(namespace=NAMESPACE.encode(), hash_algo=signature.hash_algorithm.encode(), hash=digest)
        return ecdsa_verifies(signature.key, signature.signature, wrapper.to_bytes())
    check_library_key(signature.key)
    try:
        check_signature(message, signature.text, NAMESPACE)
    except InvalidSignature:
        return False
    except ValueError as err:
        raise SignatureFormatError(f"the signature cannot be decoded: {err}") from err
    return True
