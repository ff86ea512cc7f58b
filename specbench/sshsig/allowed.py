"""OpenSSH allowed_signers files (ssh-keygen(1) ALLOWED SIGNERS; git's gpg.ssh.allowedSignersFile).

One signer a line: `principals [options] keytype base64-key [comment]`, where principals is a
comma-separated pattern list and options are `namespaces="..."`, `valid-after="..."`,
`valid-before="..."` and `cert-authority`. Times are YYYYMMDD[HHMM[SS]], in UTC with a trailing
Z and in local time without, as ssh-keygen reads them.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import re
import time
from dataclasses import dataclass
from pathlib import Path

from specbench.errors import InputError, Location, Problem
from specbench.sshsig.keys import SshKey
from specbench.sshsig.wire import WireError

MAX_FILE_BYTES = 1024 * 1024
_TIME = re.compile(r"^(\d{8})(\d{4}(\d{2})?)?(Z)?$")
_KEY_TOKEN = re.compile(r"^(ssh|ecdsa|sk)-[A-Za-z0-9@._-]+$")


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
    digits = text.rstrip("Z").ljust(14, "0")
    try:
        parts = time.strptime(digits, "%Y%m%d%H%M%S")
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
    rest = line.strip()
    if not rest or rest.startswith("#"):
        return None
    principals, rest = _field(rest)
    if not rest:
        raise ValueError(f"expected principals, options and a key, found only {principals!r}")
    options: dict[str, str | bool] = {}
    if not _KEY_TOKEN.match(rest.split(None, 1)[0]):
        text, rest = _options_field(rest)
        options = _options(text)
    key = _key(rest)
    return _signer(number, principals, key, options)


def _key_types() -> set[str]:
    return {"ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521"} | {
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
        "ssh-ed25519-cert-v01@openssh.com",
        "ssh-rsa-cert-v01@openssh.com",
        "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    }


def _field(text: str) -> tuple[str, str]:
    """The first field and the rest: up to whitespace, or a double-quoted string (spaces allowed)."""
    if text.startswith('"'):
        end = text.find('"', 1)
        if end < 0:
            raise ValueError("expected a closing double quote, found the end of the line")
        return text[1:end], text[end + 1 :].lstrip()
    head, _, rest = re.sub(r"\s", " ", text, count=0).partition(" ")
    return head, text[len(head) :].lstrip() if rest else ""


def _options_field(text: str) -> tuple[str, str]:
    """The options field: up to the first whitespace outside double quotes."""
    quoted = False
    for i, char in enumerate(text):
        if char == '"' and (i == 0 or text[i - 1] != "\\"):
            quoted = not quoted
        elif char in " \t" and not quoted:
            return text[:i], text[i:].lstrip()
    if quoted:
        raise ValueError("expected a closing double quote in the options, found the end of the line")
    return text, ""


def _options(text: str) -> dict[str, str | bool]:
    options: dict[str, str | bool] = {}
    for item in _split_options(text):
        name, _, value = item.partition("=")
        name = name.lower()
        if name == "cert-authority" and not value:
            options[name] = True
            continue
        if name not in ("namespaces", "valid-after", "valid-before"):
            raise ValueError(f"expected options cert-authority, namespaces, valid-after, valid-before; found {item!r}")
        if not (len(value) >= 2 and value.startswith('"') and value.endswith('"')):
            raise ValueError(f'expected {name}="...", found {item!r}')
        if name in options:
            raise ValueError(f"expected one {name} option, found several")
        options[name] = value[1:-1].replace('\\"', '"')
    return options


def _split_options(text: str) -> list[str]:
    items: list[str] = []
    current = ""
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    if any(not item for item in items):
        raise ValueError(f"expected comma-separated options, found an empty one in {text!r}")
    return items


def _key(text: str) -> SshKey:
    parts = text.split()
    if len(parts) < 2:
        raise ValueError(f"expected a key (type and base64), found {text!r}")
    key_type, encoded = parts[0], parts[1]
    if key_type not in _key_types():
        raise ValueError(f"expected a key type such as ssh-ed25519, found {key_type!r}")
    try:
        key = SshKey.from_blob(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError, WireError) as err:
        raise ValueError(f"expected a base64 {key_type} key, found one that cannot be decoded: {err}") from err
    if key.key_type != key_type:
        raise ValueError(f"expected a {key_type} key blob, found a {key.key_type} blob")
    return key


def _signer(number: int, principals: str, key: SshKey, options: dict[str, str | bool]) -> Signer:
    times: dict[str, float | None] = {}
    for name in ("valid-after", "valid-before"):
        value = options.get(name)
        if isinstance(value, str):
            parsed = parse_time(value)
            if parsed is None:
                raise ValueError(f'expected {name}="YYYYMMDD[HHMM[SS]][Z]", found {value!r}')
            times[name] = parsed
    after, before = times.get("valid-after"), times.get("valid-before")
    if after is not None and before is not None and before <= after:
        raise ValueError("expected valid-before after valid-after, found it at or before")
    namespaces = options.get("namespaces")
    return Signer(
        line=number,
        principals=principals,
        key=key,
        namespaces=namespaces if isinstance(namespaces, str) else None,
        valid_after=after,
        valid_before=before,
        cert_authority=options.get("cert-authority") is True,
    )
