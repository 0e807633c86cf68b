"""What a run is asked to measure: the run configuration with each suite's options, the budget defaults, the command line's argument types."""
