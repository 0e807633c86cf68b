"""A branch's history: cost per iteration per commit, the steps found in it, and a bisect
(docs/HISTORY.md)."""
