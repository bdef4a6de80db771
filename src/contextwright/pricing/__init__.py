"""Prices and prompt-cache simulation, off the send path.

:mod:`.prices` holds the dated list-price table and the exact cost of a
:class:`~contextwright.events.catalog.Usage`; :mod:`.cache_sim` replays request bodies
through offline simulators of each provider's prompt cache. Both read the wires
(:mod:`contextwright.providers`) and nothing sends a request through them: the runtime never
imports this package (an import-linter contract), while ``compare``, ``report``,
``telemetry``, the service and the command line do.
"""
