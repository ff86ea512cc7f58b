"""FLOPs accounting, Valid FLOPS, per-watt metrics and aggregation. Imports no torch."""
