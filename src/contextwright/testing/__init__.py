"""Public test helpers: the event-log contract suite, fakes, and corpus discovery."""
