"""Pressure relief for tool results: call-time capping and per-kind compression.

``cap`` bounds any text to a head, a fixed omission marker carrying an artifact
pointer, and a tail. ``compressors`` shrinks tool outputs by kind (test runners,
builds, linters, git, search, listings, JSON, stack traces) without ever dropping a
failure line.
"""
