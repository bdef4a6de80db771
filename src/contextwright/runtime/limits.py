"""Numbers the runtime works with: what counts as untrusted, and what a pointer or an envelope costs."""

UNTRUSTED = frozenset({"external_untrusted"})
"""Trust levels whose presence in a run withholds the run's facts from memory candidates."""

FORCED_REVOCATION = "forced: operator immediate revocation"
"""The reason recorded on a tool revoked at once by an operator (it left the prefix)."""

POINTER_STUB_TOKENS = 40
"""What a pruned tool result still costs: the pointer line."""

RESULT_FLOOR_TOKENS = 256
"""The least a new tool result may show, however many results its exchange already holds."""

ENVELOPE_TOKENS = 45
"""About what an envelope's two tag lines cost, in tokens."""
