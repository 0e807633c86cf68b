"""reqstate-bench: the harness. Data flows one way: strategies <- workload/scheduler <- suites
-> results JSON -> report/gate."""
