"""Integrations with agent frameworks, SDK hooks and gateways; each module needs its own extra.

* :mod:`contextwright.integrations.langchain`: LangChain 1.x agent middleware (``[langchain]``).
* :mod:`contextwright.integrations.agents`: OpenAI Agents SDK session and model input filter (``[agents]``).
* :mod:`contextwright.integrations.anthropic`: middleware for the official Anthropic client (``[anthropic]``).
* :mod:`contextwright.integrations.openai`: a wrapper for the official OpenAI client (``[openai]``).
* :mod:`contextwright.integrations.litellm`: LiteLLM (``[litellm]``).
"""
