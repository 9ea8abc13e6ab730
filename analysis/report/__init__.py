"""The threshold report: `analyse` a trial table, then `write_report` HTML, Markdown and CSV.

from analysis.trial_table import load_trial_table
from analysis.report import ReportOptions, analyse, write_report
data = analyse(load_trial_table("export/"), ReportOptions(n_boot=1000, seed=0))
paths = write_report(data, "report/")
"""

from analysis.report.build import ReportData, ReportOptions, analyse
from analysis.report.estimate import psychometric_estimate
from analysis.report.render import write_report

__all__ = ["ReportData", "ReportOptions", "analyse", "psychometric_estimate", "write_report"]
