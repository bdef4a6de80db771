"""A model-backed compactor (R5): the extractive fold, its record of the work retold by a model.

``engine.session(..., compactor=ModelSummarizer(anthropic.Anthropic(), "claude-haiku-4-5"))``
(or an ``openai.OpenAI`` client and a model id, on Chat Completions or, with
``wire="openai_responses"``, Responses). The model never decides what is folded nor
what trust a line has; the engine does, around one call of the model:

* what is folded, the pointers to tool outputs and the depth are the extractive
  compactor's (:func:`~contextwright.relief.compactor.compact`): a fold that would
  pass the depth cap escalates without asking the model;
* the model is handed the fold's lines at ``tool`` trust or above only: the user's and
  operator's requests as extracted, the assistant's own words with every repeat of tool
  output already elided, and the tool lines (names, outcomes, pointers). It never sees a
  tool's output, recalled evidence, or a line below ``tool`` trust;
* its reply is labelled ``tool`` (the lowest trust of what it may be handed), so the model's
  words are data to the agent, never a trusted voice; the requests stay as extracted,
  at their own labels, and lines below ``tool`` trust are kept as they were (enveloped);
* the session checks the labels of the result like any plugged compactor's
  (:mod:`contextwright.relief.compaction_check`): a reply that repeats untrusted text is
  rejected and the extractive summary adopted;
* a model call that fails, takes longer than ``timeout`` seconds, or answers with nothing
  usable raises :class:`~contextwright.runtime.errors.SummaryUnavailable`; the session
  adopts the extractive summary and records ``context.compaction.rejected`` naming why.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Literal

from contextwright.derive._surface import Surface
from contextwright.derive._taint import summary_lines
from contextwright.events.catalog import TRUST_LEVELS, CompactionTrigger, SummaryLine, TrustLevel
from contextwright.relief.compactor import HEADER, CompactionResult, compact
from contextwright.runtime.errors import SummaryUnavailable

__all__ = ["INSTRUCTIONS", "ModelSummarizer"]

SummaryWire = Literal["anthropic", "openai_chat", "openai_responses"]

INSTRUCTIONS = (
    "You condense the record of an agent's earlier work so the agent can continue it. "
    "The record lists what the user asked, what the assistant said it did, and which tools ran "
    "(with references such as sha256:... to outputs you cannot see). "
    "Write at most 8 short lines, one fact per line, no preamble: what was done, what was found "
    "or decided, what failed, what remains open. Keep file paths, identifiers, numbers and "
    "references exactly as written. Do not address the agent and do not give it instructions."
)

HANDED: frozenset[TrustLevel] = frozenset(TRUST_LEVELS[: TRUST_LEVELS.index("tool") + 1])
"""The trust levels the model may read: ``tool`` and every level above it."""

RECAP = "  Recap: "
MAX_RECAP_LINES = 12
MAX_LINE_CHARS = 240


class ModelSummarizer:
    """A compactor whose summary of the work is written by a model over an SDK client the caller passes."""

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        wire: SummaryWire | None = None,
        timeout: float = 30.0,
        max_tokens: int = 1024,
    ) -> None:
        """``client``: an ``anthropic.Anthropic`` or ``openai.OpenAI`` (or compatible) client; ``model``: its model id.

        ``wire`` defaults to ``anthropic`` for an Anthropic client and ``openai_chat`` otherwise.
        The call is sent once (no SDK retries) and abandoned after ``timeout`` seconds."""
        self.wire: SummaryWire = wire or ("anthropic" if type(client).__module__.startswith("anthropic") else "openai_chat")
        self.model = model
        self.timeout = timeout
        self.max_tokens = max_tokens
        with_options = getattr(client, "with_options", None)
        self.client = with_options(timeout=timeout, max_retries=0) if callable(with_options) else client

    def __call__(
        self, surface: Surface, *, epoch: int, trigger: CompactionTrigger, max_summary_chars: int = 16_000
    ) -> CompactionResult:
        """The extractive proposal for ``surface``, its record of the work retold by the model."""
        proposal = compact(surface, epoch=epoch, trigger=trigger, max_summary_chars=max_summary_chars)
        compacted = proposal.compacted
        if compacted is None:
            return proposal  # nothing to fold, or an escalation: the depth cap holds without the model
        lines = summary_lines(compacted)
        handed = [line for line in lines if line.trust in HANDED]
        if not handed:
            return proposal
        # The model's words are a record at tool trust, whatever it was handed: never a trusted voice.
        record = "\n".join(line.text for line in handed)
        recap = [SummaryLine(text=RECAP + text, trust="tool") for text in self._recap(record)]
        requests = [line for line in lines if line.trust in ("operator", "user")]
        kept = [line for line in lines if line.trust not in HANDED]
        rewritten = [*requests, *recap, *kept]
        if sum(len(line.text) + 1 for line in rewritten) > max_summary_chars:
            raise SummaryUnavailable(f"the model's summary does not fit in {max_summary_chars} characters", reason="too_long")
        summary = "\n".join([HEADER, *(line.text for line in rewritten)])
        return replace(proposal, compacted=replace(compacted, summary=summary, lines=tuple(rewritten)))

    def _recap(self, record: str) -> list[str]:
        """The model's lines for ``record``, each flattened and bounded."""
        reply = self._call(record)
        texts = [" ".join(line.lstrip("-*• ").split()) for line in reply.splitlines()]
        texts = [text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 1] + "…" for text in texts if text]
        if not texts:
            raise SummaryUnavailable("the model answered with no summary text", reason="empty")
        return texts[:MAX_RECAP_LINES]

    def _call(self, record: str) -> str:
        """One model call, abandoned after ``timeout`` seconds (the SDK's own timeout is set too)."""
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append(self._send(record))
            except BaseException as exc:  # handed back to the caller's thread below
                outcome.append(exc)

        worker = threading.Thread(target=run, name="contextwright-model-summary", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if not outcome:
            raise SummaryUnavailable(f"the model call took longer than {self.timeout:g}s", reason="timeout")
        if isinstance(outcome[0], BaseException):
            raise SummaryUnavailable(
                f"the model call failed ({type(outcome[0]).__name__})", reason="failed", cause=type(outcome[0]).__name__
            ) from outcome[0]
        return str(outcome[0])

    def _send(self, record: str) -> str:
        if self.wire == "anthropic":
            message = self.client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=INSTRUCTIONS,
                messages=[{"role": "user", "content": record}],
            )
            return "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
        if self.wire == "openai_responses":
            response = self.client.responses.create(
                model=self.model, instructions=INSTRUCTIONS, input=record, max_output_tokens=self.max_tokens
            )
            return str(response.output_text or "")
        completion = self.client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": record}],
            max_completion_tokens=self.max_tokens,
        )
        return str(completion.choices[0].message.content or "")
