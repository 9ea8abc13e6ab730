"""`uxlab plan`'s defaults, apart from the planning code so that the command's help is
written without importing it (numpy, scipy)."""

DEFAULT_PARTICIPANTS = "8:48"
"""From the report's minimum for a population interval (8, `analysis.report.support`)."""
DEFAULT_REPEATS = "2:20"
DEFAULT_N_PARTICIPANTS = 8
DEFAULT_N_REPEATS = 6
DEFAULT_POWER = 0.8
DEFAULT_REFERENCE = "nielsen1993-1s"
