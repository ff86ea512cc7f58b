"""Generators of test data (hostile submissions) and the helpers that run specbench on them."""
