"""Results: the typed run summary, the finish step that builds it, and its writers (json, md, csv, html) and readers."""
