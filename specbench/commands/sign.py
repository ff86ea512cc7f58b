"""`specbench sign`: sign a submission's manifest.json with an SSH key, through OpenSSH's `ssh-keygen -Y sign`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from specbench.errors import UsageError


@click.command(
    name="sign",
    epilog="\b\nVerify with: specbench validate ORG/SYSTEM --allowed-signers FILE\n"
    "or: ssh-keygen -Y verify -f FILE -I PRINCIPAL -n specbench -s manifest.json.sig < manifest.json\n"
    "Docs: docs/submission-format.md (manifest.json.sig), docs/rules.md (Authenticity).",
)
@click.argument("submission", type=click.Path(path_type=Path), metavar="SUBMISSION")
@click.option(
    "-k",
    "--key",
    "key_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="Private key file as ssh-keygen -f takes it (ed25519, ECDSA or RSA); ssh-keygen asks for its passphrase.",
)
def command(submission: Path, key_path: Path) -> None:
    """Sign SUBMISSION's manifest.json, writing manifest.json.sig next to it.

    SUBMISSION is an ORG/SYSTEM folder (or a BENCHMARK folder inside it, whose ORG/SYSTEM
    manifest is signed). The manifest must match the files first: a signature vouches for
    what the manifest lists. OpenSSH's ssh-keygen signs (namespace "specbench"), so git's
    tooling and ssh-keygen verify the signature too.
    """
    from specbench.files import atomic_write_bytes
    from specbench.formats.layout import MANIFEST, SIGNATURE_FILE
    from specbench.sshsig import NAMESPACE, parse, sign
    from specbench.sshsig.keygen import ssh_keygen
    from specbench.validator.validate import classify

    ssh_keygen()
    target = classify(submission)
    if target is None:
        raise UsageError(f"expected an ORG/SYSTEM folder (with system.yaml) or a BENCHMARK folder, found {submission}")
    root = target.root
    message = _checked_manifest(root)
    out = root / SIGNATURE_FILE
    if out.is_symlink():
        raise UsageError(f"{out} is a symbolic link; remove it before signing")
    signature = sign(message, key_path)
    atomic_write_bytes(out, signature)
    os.chmod(out, 0o644)
    key = parse(signature).key
    click.echo(f"signed {root / MANIFEST} with {key.key_type} key {key.fingerprint()} (namespace {NAMESPACE})")
    click.echo(f"wrote {out}")
    click.echo(f'allowed_signers line for maintainers: PRINCIPAL namespaces="{NAMESPACE}" {key.openssh()}')


def _checked_manifest(root: Path) -> bytes:
    """The manifest's bytes, as read (once, confined to `root`) and checked against the files; refused when it is
    missing or does not match them."""
    from specbench.formats.layout import MANIFEST
    from specbench.validator.context import Context, SpecIndex
    from specbench.validator.files import DEFAULT_LIMITS, Tree
    from specbench.validator.findings import Findings
    from specbench.validator.integrity import check_manifest, compare_deferred

    findings = Findings()
    tree = Tree.scan(root, DEFAULT_LIMITS, findings)
    if not tree.has(MANIFEST):
        raise UsageError(f"no {MANIFEST} in {root}: `specbench execute` writes it; there is nothing to sign")
    ctx = Context(tree, findings, DEFAULT_LIMITS, SpecIndex())
    compare_deferred(ctx, check_manifest(ctx, None))
    broken = [f for f in findings.items if f.severity == "error"]
    if broken:
        shown = "; ".join(f"{f.location.file}: {f.message}" for f in broken[:3])
        more = f" (and {len(broken) - 3} more)" if len(broken) > 3 else ""
        raise UsageError(
            f"{root / MANIFEST} does not match the files, so a signature would vouch for something else: "
            f"{shown}{more}. Run `specbench validate {root}` for every finding"
        )
    loaded = ctx.loaded.get(MANIFEST)
    if loaded is None:
        raise UsageError(f"{root / MANIFEST} cannot be read as a manifest: run `specbench validate {root}`")
    return loaded.text.encode("utf-8")
