"""OpenSSH allowed_signers files (ssh-keygen(1) ALLOWED SIGNERS; git's gpg.ssh.allowedSignersFile).

The `sshsig` library splits a line into principals, options and key. What it leaves to the
caller is kept here: line numbers in errors, the key types, OpenSSH's pattern lists, and the
YYYYMMDD[HHMM[SS]][Z] times of valid-after and valid-before (UTC with Z, local time without).
"""

from __future__ import annotations

import base64
import binascii
import calendar
import re
import time
from dataclasses import dataclass
from pathlib import Path

from sshsig.allowed_signers import AllowedSigner

from specbench.errors import InputError, Location, Problem
from specbench.sshsig.keys import CURVES, SignatureFormatError, SshKey

MAX_FILE_BYTES = 1024 * 1024
LISTED_KEY_TYPES = {
    "ssh-ed25519",
    "ssh-rsa",
    *CURVES,
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "ssh-ed25519-cert-v01@openssh.com",
    "ssh-rsa-cert-v01@openssh.com",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
}
"""Key types a line may name; only those of keys.KEY_TYPES ever verify a signature."""
_TIME = re.compile(r"^(\d{8})(\d{4}(\d{2})?)?(Z)?$")


@dataclass(frozen=True)
class Signer:
    """One line of an allowed_signers file."""

    line: int
    principals: str
    key: SshKey
    namespaces: str | None = None
    valid_after: float | None = None
    valid_before: float | None = None
    cert_authority: bool = False


@dataclass(frozen=True)
class AllowedSigners:
    """The signers of one file, in file order."""

    path: str
    signers: tuple[Signer, ...]

    def for_key(self, key: SshKey) -> list[Signer]:
        """The lines that list this exact key (certificate-authority lines never match a plain key)."""
        return [s for s in self.signers if not s.cert_authority and s.key.blob == key.blob]


def match_pattern_list(value: str, patterns: str) -> bool:
    """OpenSSH's match_pattern_list: comma-separated `*`/`?` patterns; a matching `!pattern` vetoes."""
    matched = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        body = pattern[1:] if negated else pattern
        if re.fullmatch(re.escape(body).replace(r"\*", ".*").replace(r"\?", "."), value, re.DOTALL):
            if negated:
                return False
            matched = True
    return matched


def parse_time(text: str) -> float | None:
    """Seconds since the epoch of a YYYYMMDD[HHMM[SS]][Z] time, or None when it is not one."""
    found = _TIME.match(text)
    if found is None:
        return None
    try:
        parts = time.strptime(text.rstrip("Z").ljust(14, "0"), "%Y%m%d%H%M%S")
    except ValueError:
        return None
    return float(calendar.timegm(parts)) if found.group(4) else time.mktime(parts)


def load_allowed_signers(path: str | Path) -> AllowedSigners:
    """Every signer of a file; InputError naming the line of each malformed one."""
    file = Path(path)
    try:
        raw = file.read_bytes()[: MAX_FILE_BYTES + 1]
    except OSError as err:
        raise InputError(
            [Problem(Location(str(file)), f"cannot read the allowed signers file: {err.strerror}")]
        ) from err
    if len(raw) > MAX_FILE_BYTES:
        raise InputError([Problem(Location(str(file)), f"expected at most {MAX_FILE_BYTES} bytes, found more")])
    signers: list[Signer] = []
    problems: list[Problem] = []
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        try:
            signer = parse_line(line, number)
        except ValueError as err:
            problems.append(Problem(Location(str(file), number), str(err)))
            continue
        if signer is not None:
            signers.append(signer)
    if problems:
        raise InputError(problems)
    return AllowedSigners(str(file), tuple(signers))


def parse_line(line: str, number: int) -> Signer | None:
    """One line: a Signer, None for a blank or comment line; ValueError says what is wrong."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    try:
        entry = AllowedSigner.parse(text)
    except (ValueError, IndexError, NotImplementedError) as err:
        raise ValueError(
            f"expected `principals [options] keytype base64-key`, found a line that is not: {err}"
        ) from err
    options = entry.options or {}
    after, before = _time(options, "valid-after"), _time(options, "valid-before")
    if after is not None and before is not None and before <= after:
        raise ValueError("expected valid-before after valid-after, found it at or before")
    return Signer(
        line=number,
        principals=entry.principals,
        key=_key(entry.key_type, entry.base64_key),
        namespaces=options.get("namespaces"),
        valid_after=after,
        valid_before=before,
        cert_authority="cert-authority" in options,
    )


def _time(options: dict[str, str], name: str) -> float | None:
    if name not in options:
        return None
    parsed = parse_time(options[name])
    if parsed is None:
        raise ValueError(f'expected {name}="YYYYMMDD[HHMM[SS]][Z]", found {options[name]!r}')
    return parsed


def _key(key_type: str, encoded: str) -> SshKey:
    if key_type not in LISTED_KEY_TYPES:
        raise ValueError(f"expected a key type such as ssh-ed25519, found {key_type!r}")
    try:
        key = SshKey.from_blob(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError, SignatureFormatError) as err:
        raise ValueError(f"expected a base64 {key_type} key, found one that cannot be decoded: {err}") from err
    if key.key_type != key_type:
        raise ValueError(f"expected a {key_type} key blob, found a {key.key_type} blob")
    return key
