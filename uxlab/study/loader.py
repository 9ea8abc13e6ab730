"""Reading a study file: kept so `uxlab.study.loader` imports keep working; the reader is
the package `uxlab.study.loading`, one module per section of the file."""

from uxlab.study.loading import StudyError, load_study, parse_study

__all__ = ["StudyError", "load_study", "parse_study"]
