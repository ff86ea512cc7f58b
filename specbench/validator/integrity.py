"""Integrity: the manifest's hashes against the files, and the spec digest against the known specs."""

from __future__ import annotations

from specbench.files import MANIFEST, MANIFEST_FORMAT_VERSION, SIGNATURE_FILE
from specbench.formats.manifest import Manifest, ManifestEntry
from specbench.spec.loader import LoadedSpec
from specbench.spec.system import SubmissionMeta
from specbench.validator.context import Context
from specbench.validator.documents import Loaded, check_mapping, check_version, load_json, to_model
from specbench.validator.files import CHUNK_BYTES


def unsafe_path_reason(path: str) -> str | None:
    """Why a manifest path could point outside the folder or be ambiguous, or None when it is safe."""
    if not path:
        return "it is empty"
    if "\\" in path or "\x00" in path:
        return "it holds a backslash or NUL character"
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return "it is absolute"
    parts = path.split("/")
    if ".." in parts:
        return "it holds a '..' segment"
    if any(part in ("", ".") for part in parts):
        return "it holds an empty or '.' segment"
    return None


def in_scope(rel: str, benchmark: str | None) -> bool:
    """Whether a file belongs to what is validated: everything, or system.yaml and one BENCHMARK folder."""
    return benchmark is None or rel == "system.yaml" or rel.startswith(f"{benchmark}/")


Deferred = list[tuple[str, ManifestEntry]]
"""Listed files whose hash is compared once the checks have read them (`compare_deferred`)."""


def check_manifest(ctx: Context, benchmark: str | None) -> Deferred:
    """manifest.json against the listing; the hashes of small files compared now, of big ones deferred.

    A big file (a long log, a power trace) is hashed as the checks read it, so that it is read once;
    `compare_deferred` compares what the manifest lists with those hashes after the checks.
    """
    deferred: Deferred = []
    tree, findings = ctx.tree, ctx.findings
    if not tree.has(MANIFEST):
        if MANIFEST not in tree.refused:
            findings.add(
                "SB-STR-002", MANIFEST, "expected manifest.json (sha256 of every file) in ORG/SYSTEM, found none"
            )
        return deferred
    loaded = load_json(tree, MANIFEST, findings)
    if loaded is not None:
        ctx.loaded[MANIFEST] = loaded  # the bytes `specbench sign` signs: the ones checked here
    if (
        loaded is None
        or not check_mapping(loaded, findings)
        or not check_version(loaded, MANIFEST_FORMAT_VERSION, findings)
    ):
        return deferred
    manifest = to_model(Manifest, loaded, findings)
    if manifest is None:
        return deferred
    listed = _safe_entries(ctx, loaded, manifest)
    for rel in sorted(tree.files):
        if rel in (MANIFEST, SIGNATURE_FILE) or not in_scope(rel, benchmark):
            continue
        entry = listed.get(rel)
        if entry is None:
            findings.add("SB-INT-002", rel, "expected the file to be listed in manifest.json, found it unlisted")
            continue
        if tree.files[rel].size >= CHUNK_BYTES and rel not in tree.digests:
            deferred.append((rel, entry))
            continue
        _compare(ctx, rel, entry)
    for rel in sorted(listed):
        if in_scope(rel, benchmark) and rel not in tree.files and rel not in tree.refused:
            findings.add(
                "SB-INT-003",
                MANIFEST,
                f"expected {rel} (listed in the manifest) to exist, found no such file",
                **loaded.locate("files", rel),
            )
    return deferred


def compare_deferred(ctx: Context, deferred: Deferred) -> None:
    """The deferred hashes: of the bytes the checks read, or (a file no check reads) streamed now."""
    for rel, entry in deferred:
        _compare(ctx, rel, entry)


def _compare(ctx: Context, rel: str, entry: ManifestEntry) -> None:
    found = ctx.tree.digest(rel)
    if found is None:
        return
    sha, size = found
    if sha != entry.sha256 or size != entry.bytes:
        ctx.findings.add(
            "SB-INT-001",
            rel,
            f"expected sha256 {entry.sha256[:16]}… and {entry.bytes} bytes (manifest.json), "
            f"found sha256 {sha[:16]}… and {size} bytes",
        )


def _safe_entries(ctx: Context, loaded: Loaded, manifest: Manifest) -> dict[str, ManifestEntry]:
    safe: dict[str, ManifestEntry] = {}
    for rel, entry in manifest.files.items():
        reason = unsafe_path_reason(rel)
        if reason is None and rel == MANIFEST:
            reason = "the manifest does not list itself"
        if reason is None and rel == SIGNATURE_FILE:
            reason = "the manifest does not list its own signature"
        if reason is not None:
            ctx.findings.add(
                "SB-STR-005",
                MANIFEST,
                f"expected a relative path inside the submission, found {rel!r}: {reason}",
                **loaded.locate("files", rel),
            )
            continue
        safe[rel] = entry
    return safe


def check_spec_identity(ctx: Context, meta: SubmissionMeta, loaded: Loaded) -> LoadedSpec | None:
    """The spec submission.yaml names by digest; findings when the digest or the identity is off."""
    spec = ctx.specs.find(meta.spec_id, meta.spec_sha256)
    if spec is None:
        named = ctx.specs.named(meta.spec_id)
        known = "; ".join(f"{s.spec.id} {s.spec.version} has {d}" for s, d in named) or (
            f"no known spec has id {meta.spec_id!r}"
        )
        ctx.findings.add(
            "SB-INT-004",
            loaded.file,
            f"expected the sha256 of a known spec, found {meta.spec_sha256}, which names none ({known})",
            **loaded.locate("spec_sha256"),
        )
        return None
    for key, found, expected in (
        ("spec_id", meta.spec_id, spec.spec.id),
        ("spec_version", meta.spec_version, spec.spec.version),
    ):
        if found != expected:
            ctx.findings.add(
                "SB-INT-005",
                loaded.file,
                f"expected {key} {expected!r} (the spec with sha256 {meta.spec_sha256[:16]}…), found {found!r}",
                **loaded.locate(key),
            )
    return spec
