"""clstream: measure whether an LLM system keeps up with a changing world.

One stream abstraction (events in order, a stateful system, probes along the way) serves
four protocols: streaming knowledge (OAKS), sequential task streams (SeqMem-Eval),
stateful environments (CL-Bench) and corpus internalization (ImprintBench).
"""

__version__ = "0.1.0"
