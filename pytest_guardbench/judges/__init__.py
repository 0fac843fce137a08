"""Safety judges: the Judge protocol, the rules judge, the LLM judge with strict JSON, the offline judge of trained heads, and judge quality against human labels."""
