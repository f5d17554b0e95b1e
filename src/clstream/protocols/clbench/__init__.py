"""Stateful environments (CL-Bench; SPECS §3): a system works through a schedule of task
instances whose environment drifts between stages, once statefully (one system across the whole
schedule, several rollouts in permuted orders) and once statelessly (a fresh system per
instance); the difference between the two arms, paired by instance, is what the system learned.

The package's ``records`` module reads the SPECS §5 records file, ``metrics`` holds the paper's
metrics as pure functions and the ``score clbench`` JSON, and ``commands`` the command-line verb.
"""
