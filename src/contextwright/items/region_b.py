"""Region-B items: the turn body, which may differ between two requests of a session.

Each kind of body content declares its region, budget class and layer here, like the
region-A items do; assembly looks every body part up by its budget class and refuses a
part whose class is undeclared or declared for the prefix.
"""

from __future__ import annotations

from typing import ClassVar

from contextwright.items.base import ContextItem, Layer, Region


class BodyItem(ContextItem, abstract=True):
    """Base of region-B items."""

    region: ClassVar[Region] = "B"
    layer: ClassVar[Layer] = "live"


class HistoryMessage(BodyItem):
    """A user, operator or assistant message of the conversation, and the model's tool calls."""

    budget_class: ClassVar[str] = "history"


class SignedReasoning(BodyItem):
    """A provider's signed thinking or reasoning item, kept verbatim with the answer it belongs to."""

    budget_class: ClassVar[str] = "reasoning"


class SteeringNote(BodyItem):
    """A note given during a run, kept verbatim."""

    budget_class: ClassVar[str] = "steering"


class ToolResultItem(BodyItem):
    """The bounded view of one tool output."""

    budget_class: ClassVar[str] = "tool_results"


class PointerStub(BodyItem):
    """A pruned or repeated tool result shown as a pointer to the stored original."""

    budget_class: ClassVar[str] = "pointers"


class CompactionSummary(BodyItem):
    """The summary of folded history, each line at the trust of its source."""

    budget_class: ClassVar[str] = "summary"
    layer: ClassVar[Layer] = "compressed_session"


class DecisionRecord(BodyItem):
    """The decision point that replaces a closed stage."""

    budget_class: ClassVar[str] = "decision_points"
    layer: ClassVar[Layer] = "compressed_session"


class ArtifactView(BodyItem):
    """The current steps of a chunked artifact."""

    budget_class: ClassVar[str] = "artifacts"
    layer: ClassVar[Layer] = "stage_local"


class RuntimeMetadata(BodyItem):
    """The date and time and other runtime facts of a turn (volatile, so never in the prefix)."""

    budget_class: ClassVar[str] = "runtime"


class WorkingStateView(BodyItem):
    """The working state written by the control tool."""

    budget_class: ClassVar[str] = "working_state"
    layer: ClassVar[Layer] = "stage_local"


class RecallEvidence(BodyItem):
    """Evidence recalled for a turn, read fresh on every assembly."""

    budget_class: ClassVar[str] = "recall"
    layer: ClassVar[Layer] = "project_memory"


class CorrectionLine(BodyItem):
    """A correction of evidence or memory shown earlier (never yields)."""

    budget_class: ClassVar[str] = "corrections"
    layer: ClassVar[Layer] = "project_memory"


class RoundNudge(BodyItem):
    """A re-grounding nudge after many rounds."""

    budget_class: ClassVar[str] = "nudges"
