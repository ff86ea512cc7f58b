"""SSH signatures of files in OpenSSH's format (`ssh-keygen -Y sign`, the one git uses), in Python.

A maintainer verifies who signed a submission's manifest without OpenSSH installed.
"""

from __future__ import annotations

from specbench.sshsig.allowed import AllowedSigners, Signer, load_allowed_signers, match_pattern_list
from specbench.sshsig.keys import SshKey, UnsupportedKeyError, key_of, load_private_key
from specbench.sshsig.signature import (
    NAMESPACE,
    SignatureFormatError,
    SshSignature,
    UnsupportedHashError,
    parse,
    sign,
    verifies,
)
from specbench.sshsig.wire import WireError

__all__ = [
    "NAMESPACE",
    "AllowedSigners",
    "SignatureFormatError",
    "Signer",
    "SshKey",
    "SshSignature",
    "UnsupportedHashError",
    "UnsupportedKeyError",
    "WireError",
    "key_of",
    "load_allowed_signers",
    "load_private_key",
    "match_pattern_list",
    "parse",
    "sign",
    "verifies",
]
