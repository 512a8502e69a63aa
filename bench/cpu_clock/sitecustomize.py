"""Makes ``time.perf_counter`` read this process's CPU time (for tree_compare.py).

tree_compare.py puts this directory on ``PYTHONPATH`` for in-process benchmarks whose
timed work runs on one thread (generation_cost): the same for the old and the new
tree, so that on a shared machine the neighbours' load does not enter either figure.
"""

import time

time.perf_counter = time.process_time
