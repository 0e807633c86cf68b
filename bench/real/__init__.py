"""Real mode: the user's own SGLang scheduler, run on the CPU with a stand-in model.

A revision (a commit of a git repository, or a release from the package registry) gets an
environment of its own, built on demand into the user's cache folder (venv.py); a driver
(driver/, run by that environment's interpreter, never imported by the harness) builds the
revision's own Scheduler and steps its event loop; the harness measures, pairs and judges the
processes it starts (run.py, gate.py) and reads what they wrote (report.py). docs/REAL.md.
"""
