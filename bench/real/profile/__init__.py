"""`python -m bench profile --real`: py-spy profiles of a revision's own scheduler in real mode's
measured iterations, per function with intervals over processes, and the diff of two
revisions (docs/PROFILE.md)."""
