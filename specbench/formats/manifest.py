"""manifest.json as the validator reads it: sha256 and size of every other file under ORG/SYSTEM.

`specbench.files.manifest_data` builds what every writer writes (`write_manifest`, the MLPerf importer's
staging); this model is the reading of it. The file's name and version are in specbench.files.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from specbench.spec.models import Strict


class ManifestEntry(Strict):
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)


class Manifest(Strict):
    """`manifest.json`: format version, algorithm, and sha256 and size by relative path."""

    format_version: Literal[1]
    algorithm: Literal["sha256"]
    files: dict[str, ManifestEntry]
