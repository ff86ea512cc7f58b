"""`specbench reproduce`: re-run a submitted benchmark on a host of the same devices and record the verdict.

source (validate the submission, find its spec by digest) -> host (this host's devices against the
submission's) -> plan (execute's options: overrides, seeds, processes) -> rerun (execute it) -> verdict
(judge with scoring.reproduction, write reproduction.json and the manifest). docs/reproduce.md.
"""
