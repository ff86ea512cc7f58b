"""Authenticity: the SSH signature of manifest.json (`specbench sign`), verified against allowed signers.

Integrity (the manifest's hashes) says nothing changed after the manifest was written; the
signature says who wrote it. Without an allowed_signers file a valid signature is reported as
not verified, since anyone can sign with a key of their own.
"""

from __future__ import annotations

import time

from specbench.formats.layout import MANIFEST, SIGNATURE_FILE
from specbench.sshsig import (
    NAMESPACE,
    AllowedSigners,
    SignatureFormatError,
    Signer,
    SshSignature,
    UnsupportedHashError,
    UnsupportedKeyError,
    match_pattern_list,
    parse,
    verifies,
)
from specbench.sshsig.signature import MAX_SIGNATURE_BYTES
from specbench.validator.context import Context
from specbench.validator.model import SignatureInfo, SignatureStatus


def check_signature(ctx: Context, signers: AllowedSigners | None, now: float | None = None) -> SignatureInfo | None:
    """Findings about manifest.json.sig; None when there is none and no signers are required."""
    tree = ctx.tree
    source = None if signers is None else signers.path
    if not tree.has(SIGNATURE_FILE):
        if signers is None or SIGNATURE_FILE in tree.refused:
            return None
        ctx.findings.add(
            "SB-SIG-001",
            MANIFEST,
            f"expected {SIGNATURE_FILE} (signers are required by {source}), found no signature",
        )
        return SignatureInfo("missing", allowed_signers=source)
    text = tree.read(SIGNATURE_FILE, limit=MAX_SIGNATURE_BYTES)
    message = tree.read(MANIFEST) if tree.has(MANIFEST) else None
    if text is None or message is None:
        return SignatureInfo("invalid", allowed_signers=source)
    signature = _parse(ctx, text)
    if signature is None or not _valid(ctx, signature, message):
        return _info("invalid", signature, source)
    if signers is None:
        ctx.findings.add(
            "SB-SIG-007",
            SIGNATURE_FILE,
            f"expected --allowed-signers to say who may sign, found a valid signature by "
            f"{signature.key.key_type} key {signature.key.fingerprint()} that nothing vouches for",
        )
        return _info("not verified", signature, None)
    signer = _allowed(ctx, signature, signers, time.time() if now is None else now)
    if signer is None:
        return _info("invalid", signature, source)
    return _info("verified", signature, source, signer.principals)


def _info(
    status: SignatureStatus, sig: SshSignature | None, source: str | None, who: str | None = None
) -> SignatureInfo:
    if sig is None:
        return SignatureInfo(status, allowed_signers=source)
    return SignatureInfo(status, who, sig.key.key_type, sig.key.fingerprint(), source)


def _parse(ctx: Context, text: bytes) -> SshSignature | None:
    try:
        return parse(text)
    except UnsupportedHashError as err:
        ctx.findings.add("SB-SIG-008", SIGNATURE_FILE, str(err))
    except SignatureFormatError as err:
        ctx.findings.add("SB-SIG-002", SIGNATURE_FILE, f"expected an armored SSH signature (ssh-keygen -Y sign): {err}")
    return None


def _valid(ctx: Context, signature: SshSignature, message: bytes) -> bool:
    """Whether the signature is over this manifest in specbench's namespace, with findings when not."""
    if signature.namespace != NAMESPACE:
        ctx.findings.add(
            "SB-SIG-004",
            SIGNATURE_FILE,
            f"expected namespace {NAMESPACE!r} (ssh-keygen -Y sign -n {NAMESPACE}), found {signature.namespace!r}",
        )
        return False
    try:
        good = verifies(signature, message)
    except UnsupportedKeyError as err:
        ctx.findings.add("SB-SIG-008", SIGNATURE_FILE, str(err))
        return False
    except SignatureFormatError as err:
        ctx.findings.add("SB-SIG-002", SIGNATURE_FILE, f"expected a well-formed signature, found: {err}")
        return False
    if not good:
        ctx.findings.add(
            "SB-SIG-003",
            SIGNATURE_FILE,
            f"expected a signature of manifest.json by {signature.key.key_type} key {signature.key.fingerprint()}, "
            "found it does not verify: manifest.json changed after it was signed, or the signature is forged",
        )
    return good


def _allowed(ctx: Context, signature: SshSignature, signers: AllowedSigners, now: float) -> Signer | None:
    """The allowed_signers line that vouches for the signing key now, with a finding when none does."""
    key = signature.key
    lines = signers.for_key(key)
    if not lines:
        ctx.findings.add(
            "SB-SIG-005",
            SIGNATURE_FILE,
            f"expected a key listed in {signers.path}, found {key.key_type} key {key.fingerprint()}, which is not",
        )
        return None
    in_namespace = [s for s in lines if for_namespace(s)]
    if not in_namespace:
        where = ", ".join(f"line {s.line} (namespaces={s.namespaces!r})" for s in lines)
        ctx.findings.add(
            "SB-SIG-005",
            SIGNATURE_FILE,
            f"expected {signers.path} to allow key {key.fingerprint()} for namespace {NAMESPACE!r}, found only {where}",
        )
        return None
    for line in in_namespace:
        if valid_at(line, now):
            return line
    ctx.findings.add(
        "SB-SIG-006",
        SIGNATURE_FILE,
        f"expected key {key.fingerprint()} to be valid now ({_when(now)}), found "
        + "; ".join(f"{signers.path} line {s.line} {_window(s)}" for s in in_namespace),
    )
    return None


def for_namespace(line: Signer) -> bool:
    """Whether the line's namespaces option (absent: any) allows specbench's namespace."""
    return line.namespaces is None or match_pattern_list(NAMESPACE, line.namespaces)


def valid_at(line: Signer, now: float) -> bool:
    """Whether `now` lies within the line's valid-after / valid-before window (OpenSSH's comparison)."""
    after, before = line.valid_after, line.valid_before
    return (after is None or now >= after) and (before is None or now <= before)


def line_allows(line: Signer, now: float) -> bool:
    """Whether an allowed_signers line lets its key sign submissions at `now`."""
    return not line.cert_authority and for_namespace(line) and valid_at(line, now)


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def _window(signer: Signer) -> str:
    after = "" if signer.valid_after is None else f"valid after {_when(signer.valid_after)}"
    before = "" if signer.valid_before is None else f"valid before {_when(signer.valid_before)}"
    return " and ".join(part for part in (after, before) if part)
