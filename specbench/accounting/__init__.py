"""The one accounting: FLOPs, time, samples, Valid FLOPS, energy, and the quality outcome of a run. Imports no torch."""
