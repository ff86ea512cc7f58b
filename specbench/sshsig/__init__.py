"""SSH signatures of manifests in OpenSSH's format (`ssh-keygen -Y sign`, the one git uses).

The `sshsig` library reads and verifies signatures and splits allowed_signers lines, and
ssh-keygen signs; kept here is only what they leave out (see each module).
"""

from __future__ import annotations

from specbench.sshsig.allowed import AllowedSigners, Signer, load_allowed_signers, match_pattern_list
from specbench.sshsig.keygen import sign
from specbench.sshsig.keys import SignatureFormatError, SshKey, UnsupportedKeyError
from specbench.sshsig.signature import NAMESPACE, SshSignature, UnsupportedHashError, parse, verifies

__all__ = [
    "NAMESPACE",
    "AllowedSigners",
    "SignatureFormatError",
    "Signer",
    "SshKey",
    "SshSignature",
    "UnsupportedHashError",
    "UnsupportedKeyError",
    "load_allowed_signers",
    "match_pattern_list",
    "parse",
    "sign",
    "verifies",
]
