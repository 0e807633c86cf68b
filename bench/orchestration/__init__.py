"""Orchestration: the run sequence shared by the commands that measure."""
