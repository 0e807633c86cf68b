"""The worker side's shared machinery (what a suite's run module builds on):

    context.py   the worker context, one worker's output, interleaved rounds
    steps.py     step recorders, scheduler cases, counted operations, the request class
    lookups.py   lookup populations and memory regimes, timed lookup operations

Nothing here reads results or imports the report; torch comes in only when a pool or a clock
is built.
"""
