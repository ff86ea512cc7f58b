"""The torch-free run harness: run folders, lifecycle, launch, host facts, the executor base and registry."""
