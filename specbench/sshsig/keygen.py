"""Signing with OpenSSH's `ssh-keygen -Y sign`, which reads every key format, ssh-agent and passphrases."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from specbench.errors import UsageError
from specbench.sshsig.signature import NAMESPACE

MISSING = (
    "signing needs OpenSSH's ssh-keygen, which is not installed: install OpenSSH's client "
    "(Debian and Ubuntu: openssh-client; Fedora and RHEL: openssh-clients)"
)


def ssh_keygen() -> str:
    """The path of ssh-keygen; UsageError naming what to install when there is none."""
    program = shutil.which("ssh-keygen")
    if program is None:
        raise UsageError(MISSING)
    return program


def sign(message: bytes, key: Path, namespace: str = NAMESPACE) -> bytes:
    """The armored signature `ssh-keygen -Y sign -n NAMESPACE -f KEY` makes of `message`.

    ssh-keygen keeps the terminal, so it can ask for a key's passphrase; its refusals become UsageError.
    """
    program = ssh_keygen()
    if not key.is_file():
        raise UsageError(f"cannot read the key file {key}: there is no such file")
    with tempfile.TemporaryDirectory(prefix="specbench-sign-") as folder:
        data = Path(folder) / "message"
        data.write_bytes(message)
        command = [program, "-q", "-Y", "sign", "-n", namespace, "-f", str(key), str(data)]
        result = subprocess.run(command, capture_output=True, check=False)
        if result.returncode != 0:
            raise UsageError(_refusal(key, result.stderr.decode("utf-8", errors="replace")))
        return data.with_name("message.sig").read_bytes()


def _refusal(key: Path, stderr: str) -> str:
    """What ssh-keygen's refusal to sign with `key` means, and the fix."""
    if "passphrase" in stderr:
        return (
            f"{key} is encrypted with a passphrase, and ssh-keygen could not ask for it here (no terminal): "
            f"sign in a terminal, or add the key to ssh-agent first (ssh-add {key})"
        )
    if "UNPROTECTED PRIVATE KEY FILE" in stderr:
        return f"{key} can be read by other users, so ssh-keygen refuses it: run chmod 600 {key}"
    said = [line for line in stderr.splitlines() if line.strip()]
    return f"{key} is not an SSH private key that ssh-keygen can sign with: {said[-1] if said else 'no reason given'}"
