"""File formats shared by writers and readers: strict JSON, the MLLOG log and its keys."""
