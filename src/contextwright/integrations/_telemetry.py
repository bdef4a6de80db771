"""The adapters' telemetry switch: each answered request reported to OpenTelemetry (the ``otel`` extra).

``telemetry=True`` on an adapter reports the request just answered with
:func:`contextwright.telemetry.otel.observe`: on the current GenAI span of another
instrumentation when one is open (``contextwright.*`` attributes only, so ``gen_ai.usage.*``
is counted once), else as a ``chat`` span of the engine's own. The providers default to
the global ones.
"""

from __future__ import annotations

from typing import Any

from contextwright.runtime.session import Session


class Reporter:
    """Reports a session's last answered request when switched on; does nothing otherwise."""

    def __init__(self, telemetry: bool, *, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self.on = telemetry
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        if telemetry:
            from contextwright._optional import require

            require("opentelemetry.trace", extra="otel", feature="adapter telemetry")

    def report(self, session: Session) -> None:
        """Report the request ``session`` answered last."""
        if not self.on:
            return
        from contextwright.telemetry import otel
        from contextwright.telemetry.records import request_records

        records = request_records(session.history.events)
        if records:
            otel.observe(records[-1], tracer_provider=self.tracer_provider, meter_provider=self.meter_provider)
