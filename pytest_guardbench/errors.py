"""The one base of every error guardbench raises, and its kinds."""
