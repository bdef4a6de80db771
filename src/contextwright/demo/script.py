"""Generate a long, deterministic coding-agent session.

The script plays both sides: the user's messages, the model's answers (text and
tool calls, sometimes several in parallel) and the tools' outputs (large test
and build logs, file reads, searches). Everything comes from a seeded
``random.Random``, so the same seed and turn count give the same session, byte
for byte. Steps carry a time offset so a runner can move its clock (the default
session starts late in the evening and crosses midnight).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

from contextwright.derive._working_state import TOOL_NAME as WORKING_STATE_TOOL
from contextwright.events.catalog import AssistantMessage, ToolCall, ToolResult, UserMessage

MODULES = ("billing", "auth", "search", "export", "scheduler", "notifications", "reports", "storage")


@dataclass(frozen=True, kw_only=True, slots=True)
class DemoStep:
    """One scripted step: what happens, and how many seconds after the previous step."""

    kind: Literal["user", "assistant", "tool", "revoke_tool", "memory_write", "memory_correct"]
    payload: Any = None
    after_seconds: float = 30.0
    detail: dict[str, str] = field(default_factory=dict)


def demo_script(*, turns: int = 50, seed: int = 7) -> list[DemoStep]:
    """The scripted session: ``turns`` user turns, each with a few model/tool rounds."""
    rng = random.Random(seed)
    steps: list[DemoStep] = []
    call_no = 0

    def call(name: str, **arguments: Any) -> ToolCall:
        nonlocal call_no
        call_no += 1
        return ToolCall(id=f"call_{call_no:04d}", name=name, arguments=arguments)

    for turn in range(turns):
        module = MODULES[turn % len(MODULES)]
        if turn == 0:
            text = (
                "CI fails on main after the billing refactor. Find the cause and fix it. "
                "Constraints: do not change the public API; keep Python 3.11 support; "
                "never push to main directly."
            )
        else:
            text = rng.choice(
                [
                    f"Now look at the {module} module: its tests are flaky.",
                    f"Run the {module} tests again and summarise what still fails.",
                    f"Please also check the {module} build output for warnings.",
                    f"The {module} export looks wrong in the preview. Investigate.",
                ]
            )
        steps.append(DemoStep(kind="user", payload=UserMessage(text=text), after_seconds=round(rng.uniform(30, 240))))
        if turn == turns // 3:
            steps.append(DemoStep(kind="revoke_tool", detail={"tool": "deploy_preview"}, after_seconds=5))
        if turn == turns // 4:
            steps.append(DemoStep(kind="memory_write", detail={"id": "mem-python", "text": "The project supports Python 3.10."}))
        if turn == turns // 2:
            steps.append(
                DemoStep(
                    kind="memory_correct", detail={"id": "mem-python", "text": "The project supports Python 3.11 and newer."}
                )
            )
        rounds = rng.randint(1, 3)
        for round_no in range(rounds):
            calls = _calls_for_round(rng, call, module, turn, round_no)
            if round_no == 0 and turn % 5 == 0:
                calls = (_working_state_call(call, module, turn), *calls)
            steps.append(
                DemoStep(
                    kind="assistant",
                    payload=AssistantMessage(text=f"Checking {module} (step {round_no + 1}).", tool_calls=calls),
                    after_seconds=round(rng.uniform(2, 20)),
                )
            )
            for c in calls:
                steps.append(DemoStep(kind="tool", payload=_tool_output(rng, c, module), after_seconds=round(rng.uniform(1, 60))))
        steps.append(
            DemoStep(
                kind="assistant",
                payload=AssistantMessage(text=_summary(rng, module)),
                after_seconds=round(rng.uniform(2, 20)),
            )
        )
    return steps


def _working_state_call(call: Any, module: str, turn: int) -> ToolCall:
    arguments: dict[str, Any] = {
        "upsert_tasks": [{"id": f"t{turn}", "title": f"Make the {module} tests pass", "status": "doing"}],
        "next_action": f"Run the {module} tests",
    }
    if turn == 0:
        arguments["add_constraints"] = [
            "Do not change the public API.",
            "Keep Python 3.11 support.",
            "Never push to main directly.",
        ]
    if turn >= 5:
        arguments["upsert_tasks"].append({"id": f"t{turn - 5}", "status": "done"})
        arguments["add_facts"] = [f"The {MODULES[(turn - 5) % len(MODULES)]} failures came from rounding."]
    return call(WORKING_STATE_TOOL, **arguments)


def _calls_for_round(rng: random.Random, call: Any, module: str, turn: int, round_no: int) -> tuple[ToolCall, ...]:
    if round_no == 0:
        return (call("run_tests", path=f"tests/{module}", verbose=rng.random() < 0.3),)
    if rng.random() < 0.4:
        # Parallel calls: several reads and a search in one message.
        n = rng.randint(2, 5)
        return tuple(
            call("read_file", path=f"src/{module}/{name}.py")
            for name in rng.sample(["api", "models", "service", "utils", "io", "cli", "rules"], n)
        ) + (call("grep", pattern=f"def .*{module}", path="src"),)
    choice = rng.choice(["build", "edit_file", "grep", "deploy_preview"])
    if choice == "edit_file":
        return (call("edit_file", path=f"src/{module}/service.py", old="total =", new="total = Decimal("),)
    if choice == "grep":
        return (call("grep", pattern="TODO|FIXME", path=f"src/{module}"),)
    if choice == "deploy_preview":
        return (call("deploy_preview", branch=f"fix/{module}-{turn}"),)
    return (call("build", target=module),)


def _tool_output(rng: random.Random, call: ToolCall, module: str) -> ToolResult:
    if call.name == "run_tests":
        output, code = _pytest_output(rng, module)
    elif call.name == "read_file":
        output, code = _source_file(rng, module, str(call.arguments["path"])), 0
    elif call.name == "grep":
        output, code = _grep_output(rng, module), 0
    elif call.name == "build":
        output, code = _build_output(rng, module)
    elif call.name == "deploy_preview":
        output, code = f"Preview deployed: https://preview.example.invalid/{module}\n", 0
    else:
        output, code = f"Edited {call.arguments.get('path')}: 1 replacement.\n", 0
    return ToolResult(call_id=call.id, tool_name=call.name, output=output, exit_code=code, is_error=code != 0)


def _pytest_output(rng: random.Random, module: str) -> tuple[str, int]:
    n = rng.randint(40, 400)
    failing = sorted(rng.sample(range(n), rng.randint(0, 3)))
    lines = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0",
        f"collected {n} items",
        "",
    ]
    for i in range(n):
        status = "FAILED" if i in failing else "PASSED"
        lines.append(f"tests/{module}/test_{module}_{i // 20}.py::test_case_{i} {status} [{100 * (i + 1) // n:3d}%]")
    for i in failing:
        lines += [
            "",
            f"___________________________ test_case_{i} ___________________________",
            "",
            f"    def test_case_{i}():",
            f">       assert compute_{module}({i}) == {i * 3}",
            f"E       assert {i * 3 + 1} == {i * 3}",
            "",
            f"tests/{module}/test_{module}_{i // 20}.py:{10 + i}: AssertionError",
        ]
    summary = f"{len(failing)} failed, {n - len(failing)} passed" if failing else f"{n} passed"
    lines += ["", f"========================= {summary} in {rng.uniform(1, 30):.2f}s ========================="]
    return "\n".join(lines) + "\n", 1 if failing else 0


def _source_file(rng: random.Random, module: str, path: str) -> str:
    body = [f'"""{module.title()} {path.rsplit("/", 1)[-1]}."""', "", "from decimal import Decimal", ""]
    for i in range(rng.randint(20, 120)):
        body += [
            f"def {module}_helper_{i}(value):",
            f'    """Helper {i} for {module}."""',
            f"    return Decimal(value) * {rng.randint(1, 9)}",
            "",
        ]
    return "\n".join(body)


def _grep_output(rng: random.Random, module: str) -> str:
    return "".join(
        f"src/{module}/{rng.choice(['api', 'models', 'service'])}.py:{rng.randint(1, 400)}:    # TODO: handle {rng.choice(['rounding', 'timezones', 'retries', 'locale'])}\n"
        for _ in range(rng.randint(5, 60))
    )


def _build_output(rng: random.Random, module: str) -> tuple[str, int]:
    lines = [f"Building {module} ..."]
    warnings = rng.randint(0, 30)
    for i in range(rng.randint(50, 300)):
        lines.append(f"[{i:4d}] compiling src/{module}/part_{i}.py")
    for i in range(warnings):
        lines.append(f"src/{module}/part_{i}.py:{rng.randint(1, 200)}: warning: unused variable 'tmp{i}'")
    failed = rng.random() < 0.2
    if failed:
        lines.append(f"src/{module}/service.py:88: error: name 'Decimal' is not defined")
        lines.append("BUILD FAILED")
    else:
        lines.append(f"BUILD SUCCEEDED with {warnings} warnings")
    return "\n".join(lines) + "\n", 1 if failed else 0


def _summary(rng: random.Random, module: str) -> str:
    return rng.choice(
        [
            f"The {module} failures come from float rounding; I switched the totals to Decimal.",
            f"{module.title()} tests pass now. The remaining warnings are unused variables.",
            f"I found the cause in {module}: a timezone-naive timestamp. Fixed and re-ran the tests.",
        ]
    )
