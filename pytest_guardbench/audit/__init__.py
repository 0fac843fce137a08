"""The audit: which of a run's replies a person labels (designs, units, plans), the label rows and
their checks, how far two labellers agree and how their disagreements are settled, the rubric they
label by, and the scorecards corrected by the labels. Pure: no pytest, no terminal, no rendering."""
