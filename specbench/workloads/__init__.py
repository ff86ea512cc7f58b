"""One package per benchmark workload; each is imported only when a spec names its executor."""
