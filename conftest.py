# Root conftest: keeps helper folders out of collection. The guardbench plugin itself loads
# through its pytest11 entry point, so suites need nothing from here.
collect_ignore = ["bench", "scripts", "reports"]
