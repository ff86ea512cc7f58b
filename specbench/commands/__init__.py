"""One module per CLI subcommand; each holds a thin click command over the library API."""
