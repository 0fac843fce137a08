"""Running cases: the stack built from settings, the engine, the pipeline of one case, preflight, the run folder and resume."""
