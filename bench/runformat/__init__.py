"""What a run folder holds: the manifest and the suites' typed files, pyperf's JSON, the environment."""
