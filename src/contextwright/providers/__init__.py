"""Provider-facing code: usage parsing, the dated price table, offline cache simulators and error mapping."""
