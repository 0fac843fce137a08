"""Running cases: the stack built from settings, the engine, the pipeline of one case (guard → tutor → judge),
conversations and attackers, preflight, screening and the judge-quality check. Writing the run folder is
`runfolder`'s job."""
