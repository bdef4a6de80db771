"""The request builder: a pure function from plan, surface and turn inputs to a neutral request."""
