"""SSH public keys (ed25519, ECDSA P-256/384/521, RSA): blobs, fingerprints, signing and verifying.

The `cryptography` package does the arithmetic; this module speaks OpenSSH's encodings
(RFC 4253, 5656, 8332, 8709) around it, as ssh-keygen does for `-Y sign` and `-Y verify`.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from specbench.errors import UsageError
from specbench.sshsig.wire import Reader, WireError, put_mpint, put_string

PublicKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey
PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

CURVES: dict[str, tuple[str, ec.EllipticCurve, hashes.HashAlgorithm]] = {
    "ecdsa-sha2-nistp256": ("nistp256", ec.SECP256R1(), hashes.SHA256()),
    "ecdsa-sha2-nistp384": ("nistp384", ec.SECP384R1(), hashes.SHA384()),
    "ecdsa-sha2-nistp521": ("nistp521", ec.SECP521R1(), hashes.SHA512()),
}
RSA_SIGNATURES: dict[str, hashes.HashAlgorithm] = {"rsa-sha2-512": hashes.SHA512(), "rsa-sha2-256": hashes.SHA256()}
KEY_TYPES = ("ssh-ed25519", *CURVES, "ssh-rsa")
MAX_PRIVATE_KEY_BYTES = 64 * 1024


class UnsupportedKeyError(WireError):
    """A well-formed key or signature of a type this module does not verify (e.g. security keys)."""


@dataclass(frozen=True)
class SshKey:
    """A public key as OpenSSH encodes it: its type name and its wire blob."""

    key_type: str
    blob: bytes

    @classmethod
    def from_blob(cls, blob: bytes) -> SshKey:
        key_type = Reader(blob, "public key").text()
        return cls(key_type, blob)

    def fingerprint(self) -> str:
        """The SHA256 fingerprint as ssh-keygen -l prints it."""
        return "SHA256:" + base64.b64encode(hashlib.sha256(self.blob).digest()).decode().rstrip("=")

    def openssh(self) -> str:
        """The `TYPE BASE64` line of an authorized_keys or allowed_signers file."""
        return f"{self.key_type} {base64.b64encode(self.blob).decode()}"

    def public_key(self) -> PublicKey:
        """The key as a `cryptography` object; UnsupportedKeyError for other types, WireError when malformed."""
        if self.key_type not in KEY_TYPES:
            raise UnsupportedKeyError(
                f"expected a key of type {', '.join(KEY_TYPES)}, found {self.key_type!r} (not verified here)"
            )
        reader = Reader(self.blob, f"{self.key_type} public key")
        reader.text()
        key: PublicKey
        try:
            if self.key_type == "ssh-ed25519":
                key = ed25519.Ed25519PublicKey.from_public_bytes(reader.string())
            elif self.key_type == "ssh-rsa":
                exponent, modulus = reader.mpint(), reader.mpint()
                key = rsa.RSAPublicNumbers(exponent, modulus).public_key()
            else:
                curve_name, curve, _ = CURVES[self.key_type]
                if reader.text() != curve_name:
                    raise WireError(f"expected curve {curve_name} in a {self.key_type} key")
                key = ec.EllipticCurvePublicKey.from_encoded_point(curve, reader.string())
        except ValueError as err:
            raise WireError(f"the {self.key_type} public key is not a valid key: {err}") from err
        reader.end()
        return key


def key_of(public: PublicKey) -> SshKey:
    """The OpenSSH encoding of a `cryptography` public key."""
    if isinstance(public, ed25519.Ed25519PublicKey):
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return SshKey("ssh-ed25519", put_string("ssh-ed25519") + put_string(raw))
    if isinstance(public, rsa.RSAPublicKey):
        numbers = public.public_numbers()
        return SshKey("ssh-rsa", put_string("ssh-rsa") + put_mpint(numbers.e) + put_mpint(numbers.n))
    for key_type, (curve_name, curve, _) in CURVES.items():
        if public.curve.name == curve.name:
            point = public.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
            return SshKey(key_type, put_string(key_type) + put_string(curve_name) + put_string(point))
    raise UsageError(f"expected an ed25519, ECDSA P-256/384/521 or RSA key, found curve {public.curve.name}")


def sign_blob(private: PrivateKey, data: bytes) -> bytes:
    """An SSH signature blob (`string algorithm, string signature`); RSA signs with rsa-sha2-512."""
    if isinstance(private, ed25519.Ed25519PrivateKey):
        return put_string("ssh-ed25519") + put_string(private.sign(data))
    if isinstance(private, rsa.RSAPrivateKey):
        return put_string("rsa-sha2-512") + put_string(private.sign(data, padding.PKCS1v15(), hashes.SHA512()))
    key_type = key_of(private.public_key()).key_type
    r, s = decode_dss_signature(private.sign(data, ec.ECDSA(CURVES[key_type][2])))
    return put_string(key_type) + put_string(put_mpint(r) + put_mpint(s))


def verify_blob(key: SshKey, signature: bytes, data: bytes) -> bool:
    """Whether `signature` (an SSH signature blob) by `key` is valid over `data`.

    Raises UnsupportedKeyError for algorithms not accepted (ssh-rsa with SHA-1 included, as
    OpenSSH's sshsig refuses it) and WireError for a malformed blob.
    """
    public = key.public_key()
    reader = Reader(signature, "signature")
    algorithm = reader.text()
    raw = reader.string()
    reader.end()
    try:
        if isinstance(public, ed25519.Ed25519PublicKey):
            _expect(algorithm, "ssh-ed25519", key)
            public.verify(raw, data)
        elif isinstance(public, rsa.RSAPublicKey):
            if algorithm not in RSA_SIGNATURES:
                raise UnsupportedKeyError(
                    f"expected an RSA signature of {', '.join(RSA_SIGNATURES)}, found {algorithm!r}"
                )
            public.verify(raw, data, padding.PKCS1v15(), RSA_SIGNATURES[algorithm])
        else:
            _expect(algorithm, key.key_type, key)
            numbers = Reader(raw, "ECDSA signature")
            r, s = numbers.mpint(), numbers.mpint()
            numbers.end()
            public.verify(encode_dss_signature(r, s), data, ec.ECDSA(CURVES[key.key_type][2]))
    except InvalidSignature:
        return False
    return True


def _expect(algorithm: str, expected: str, key: SshKey) -> None:
    if algorithm != expected:
        raise WireError(f"expected a {expected} signature from a {key.key_type} key, found {algorithm!r}")


def load_private_key(path: Path) -> PrivateKey:
    """An unencrypted private key from an OpenSSH (or PEM) key file, with a clear error otherwise."""
    try:
        data = path.read_bytes()[: MAX_PRIVATE_KEY_BYTES + 1]
    except OSError as err:
        raise UsageError(f"cannot read the key file {path}: {err.strerror}") from err
    if len(data) > MAX_PRIVATE_KEY_BYTES:
        raise UsageError(f"{path} is over {MAX_PRIVATE_KEY_BYTES} bytes: expected an SSH private key file")
    loader = serialization.load_ssh_private_key if b"OPENSSH PRIVATE KEY" in data else _load_pem
    try:
        key = loader(data, password=None)
    except TypeError as err:
        raise UsageError(
            f"{path} is encrypted with a passphrase, which `specbench sign` does not read: sign with "
            "`ssh-keygen -Y sign -n specbench -f KEY manifest.json` (it asks for the passphrase), "
            "or use an unencrypted key"
        ) from err
    except (ValueError, UnsupportedAlgorithm) as err:
        raise UsageError(f"{path} is not an SSH private key that can be read: {err}") from err
    if not isinstance(key, ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise UsageError(f"expected an ed25519, ECDSA or RSA key in {path}, found {type(key).__name__}")
    if isinstance(key, ec.EllipticCurvePrivateKey):
        key_of(key.public_key())
    return key


def _load_pem(data: bytes, password: bytes | None) -> object:
    return serialization.load_pem_private_key(data, password=password)
