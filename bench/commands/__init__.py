"""The command line: one module per command (python -m bench --help lists them); each parses its arguments and hands them to the layer below."""
