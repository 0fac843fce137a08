"""Settings: command-line options, ini keys and `[tool.guardbench]` into one frozen Settings; model aliases;
thresholds."""
