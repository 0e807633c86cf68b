"""A user's SGLang tree as the subject under test: read a revision (tree.py), find where the
per-request PD hidden state lives (home.py) and how its call sites touch it (sites.py), compare
with the harness's model (inspection.py), and write the revision as a strategy module the
harness measures (materialize.py). `bench target inspect`, `--target` in run, list and gate."""
