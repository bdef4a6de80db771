"""Relief under pressure, as pure functions the runtime's relief stage calls.

``compactor`` proposes a compaction (an extractive, trust-preserving summary of folded
history); ``compaction_check`` checks a plugged compactor's proposal keeps its labels;
``ranking`` orders entries for dropping. The order relief runs in, and the writes it
makes, are the runtime's (``runtime/relief.py``).
"""
