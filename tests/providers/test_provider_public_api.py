"""The public surface of the provider modules is explicit, and importing them needs no SDK."""

from __future__ import annotations

import subprocess
import sys

import pytest

from contextwright.pricing import cache_sim
from contextwright.pricing import prices as pricing
from contextwright.providers import errors, usage, wire, wires


@pytest.mark.parametrize("module", [cache_sim, errors, pricing, usage, wire, wires], ids=lambda m: m.__name__)
def test_all_is_sorted_and_resolves(module: object) -> None:
    names = module.__all__  # type: ignore[attr-defined]
    # isort style (ruff RUF022): CONSTANTS, then Classes, then functions, each alphabetical.
    assert list(names) == sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    for name in names:
        assert hasattr(module, name), name


def test_cache_sim_exports_are_pinned() -> None:
    assert cache_sim.__all__ == [
        "ANTHROPIC_MODELS",
        "AnthropicCacheSimulator",
        "AnthropicModelRules",
        "CountTokens",
        "GeminiCacheSimulator",
        "GeminiRenderedBlock",
        "OpenAICacheSimulator",
        "OpenAIRenderedBlock",
        "PriceLookup",
        "RenderedBlock",
        "SimRequest",
        "SimulatedCache",
        "SimulatedRequest",
        "SimulationSummary",
        "UnsupportedSimulation",
        "anthropic_rules_for",
        "openai_regime",
        "render_anthropic_blocks",
        "render_gemini_blocks",
        "render_openai_blocks",
        "summarize",
    ]


def test_importing_the_provider_modules_does_not_import_an_sdk() -> None:
    code = (
        "import sys\n"
        "import contextwright.providers.errors, contextwright.providers.usage, contextwright.providers.wires\n"
        "import contextwright.pricing.prices, contextwright.pricing.cache_sim\n"
        "loaded = sorted(m for m in ('anthropic', 'openai', 'httpx2', 'tiktoken', 'google.genai') if m in sys.modules)\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
