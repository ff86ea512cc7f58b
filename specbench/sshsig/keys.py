"""SSH public keys: their blob and fingerprint, and the signature checks OpenSSH makes that `sshsig` leaves out.

The `sshsig` library verifies ed25519 and RSA keys; ECDSA keys (nistp256, nistp384, nistp521),
which ssh-keygen makes and signs with too, are verified here with `cryptography`.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from sshsig import PublicKey
from sshsig.binary_io import SshReader

from specbench.errors import SpecbenchError

CURVES: dict[str, tuple[str, ec.EllipticCurve, hashes.HashAlgorithm]] = {
    "ecdsa-sha2-nistp256": ("nistp256", ec.SECP256R1(), hashes.SHA256()),
    "ecdsa-sha2-nistp384": ("nistp384", ec.SECP384R1(), hashes.SHA384()),
    "ecdsa-sha2-nistp521": ("nistp521", ec.SECP521R1(), hashes.SHA512()),
}
RSA_SIGNATURES = ("rsa-sha2-512", "rsa-sha2-256")
"""OpenSSH's sshsig refuses `ssh-rsa` (SHA-1) signatures."""
KEY_TYPES = ("ssh-ed25519", *CURVES, "ssh-rsa")
KEY_FIELDS = {"ssh-ed25519": 2, "ssh-rsa": 3} | dict.fromkeys(CURVES, 3)
"""Fields of each key blob, the type name included (RFC 8709, 4253, 5656)."""


class SignatureFormatError(SpecbenchError):
    """Bytes that are not the SSH signature or key they claim to be."""


class UnsupportedKeyError(SignatureFormatError):
    """A well-formed key or signature of a kind not verified here (security keys, ssh-rsa with SHA-1)."""


@dataclass(frozen=True)
class SshKey:
    """A public key as OpenSSH encodes it: its type name and its wire blob."""

    key_type: str
    blob: bytes

    @classmethod
    def from_blob(cls, blob: bytes) -> SshKey:
        try:
            return cls(SshReader(blob).read_string().decode("utf-8"), blob)
        except ValueError as err:
            raise SignatureFormatError(f"expected an SSH public key, found bytes that are not one ({err})") from err

    def fingerprint(self) -> str:
        """The SHA256 fingerprint as ssh-keygen -l prints it."""
        return "SHA256:" + base64.b64encode(hashlib.sha256(self.blob).digest()).decode().rstrip("=")

    def openssh(self) -> str:
        """The `TYPE BASE64` of an authorized_keys or allowed_signers line."""
        return f"{self.key_type} {base64.b64encode(self.blob).decode()}"


def fields(blob: bytes, count: int, what: str, start: int = 0) -> list[bytes]:
    """Exactly `count` length-prefixed fields after `start`, or SignatureFormatError, as OpenSSH reads them.

    The `sshsig` library reads a field that runs past the end short, and ignores trailing bytes.
    """
    out: list[bytes] = []
    end = start
    for _ in range(count):
        size = int.from_bytes(blob[end : end + 4], "big")
        if end + 4 + size > len(blob):
            raise SignatureFormatError(f"the {what} is truncated")
        out.append(blob[end + 4 : end + 4 + size])
        end += 4 + size
    if end < len(blob):
        raise SignatureFormatError(f"the {what} has {len(blob) - end} bytes of trailing data")
    return out


def _positive(numbers: list[bytes], what: str) -> list[int]:
    """mpints as OpenSSH reads them: a set top bit means a negative number, which no key or signature holds."""
    if any(raw and raw[0] & 0x80 for raw in numbers):
        raise SignatureFormatError(f"the {what} holds a negative integer")
    return [int.from_bytes(raw, "big") for raw in numbers]


def check_key_and_signature(key: SshKey, signature: bytes) -> None:
    """Refuse, as OpenSSH does, a malformed key or signature blob, or an algorithm that does not fit the key."""
    if key.key_type not in KEY_TYPES:
        raise UnsupportedKeyError(
            f"expected a key of type {', '.join(KEY_TYPES)}, found {key.key_type!r} (not verified here)"
        )
    key_fields = fields(key.blob, KEY_FIELDS[key.key_type], f"{key.key_type} public key")
    if key.key_type == "ssh-rsa":
        _positive(key_fields[1:], "ssh-rsa public key")
    name, _ = fields(signature, 2, "signature")
    try:
        algorithm = name.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SignatureFormatError("the signature names its algorithm in bytes that are not UTF-8") from err
    if key.key_type == "ssh-rsa":
        if algorithm not in RSA_SIGNATURES:
            raise UnsupportedKeyError(f"expected an RSA signature of {', '.join(RSA_SIGNATURES)}, found {algorithm!r}")
    elif algorithm != key.key_type:
        raise SignatureFormatError(
            f"expected a {key.key_type} signature from a {key.key_type} key, found {algorithm!r}"
        )


def check_library_key(key: SshKey) -> None:
    """Refuse an ed25519 or RSA key blob that the `sshsig` library cannot decode."""
    decoded = PublicKey.do_from_ssh_encoding(key.blob)
    if isinstance(decoded, NotImplementedError):
        raise UnsupportedKeyError(f"expected a key the sshsig library verifies, found {key.key_type!r}: {decoded}")
    if isinstance(decoded, ValueError):
        raise SignatureFormatError(f"the {key.key_type} public key is not a valid key: {decoded}")


def ecdsa_verifies(key: SshKey, signature: bytes, data: bytes) -> bool:
    """Whether an ECDSA signature blob by `key` is valid over `data` (RFC 5656 encodings)."""
    curve_name, curve, digest = CURVES[key.key_type]
    _, named_curve, point = fields(key.blob, 3, f"{key.key_type} public key")
    if named_curve != curve_name.encode():
        raise SignatureFormatError(f"expected curve {curve_name} in a {key.key_type} key, found {named_curve!r}")
    try:
        public = ec.EllipticCurvePublicKey.from_encoded_point(curve, point)
    except ValueError as err:
        raise SignatureFormatError(f"the {key.key_type} public key is not a valid key: {err}") from err
    r, s = _positive(fields(fields(signature, 2, "signature")[1], 2, "ECDSA signature"), "ECDSA signature")
    try:
        public.verify(encode_dss_signature(r, s), data, ec.ECDSA(digest))
    except InvalidSignature:
        return False
    return True
