"""The learner's front doors: the command line, --watch, the report on screen, the hand-in zip,
and what runs before torch is imported (preflight)."""
