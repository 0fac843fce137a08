"""Cases: prompt packs, JSONL datasets and CSV files read into validated items, and expanded into stress variants by the mutators."""
