"""What a reviewer reads first in a report, read as they see it: the Markdown rendered (a
quoted command is code, not backslashes), sentences in the singular where there is one,
simulated rows marked in a mixed report's per-participant tables, and the per-participant
figure's axis label clear of its tick labels at N = 2, and every figure cropped to what it
draws: exactly as matplotlib's own "tight" crop does, or (a figure that keeps all it draws
on its canvas) to its inked pixels."""

from __future__ import annotations

import markdown
import numpy as np
import pandas as pd
from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.psychometric import PsychometricFitter
from analysis.report import ReportOptions, analyse, figure_png, write_report
from analysis.report import figures as report_figures
from analysis.report.md_escape import md_text
from analysis.trial_table import load_trial_table

ADVICE = (
    "raise the runner's priority (`uxlab run --nice 10` as root, or `sudo nice -n -10 uxlab "
    "run ...`)"
)


def test_a_quoted_command_renders_as_code_and_markup_stays_text():
    html = markdown.markdown(md_text(ADVICE))
    assert "<code>uxlab run --nice 10</code>" in html and "\\" not in html
    evil = markdown.markdown(md_text("`<img src=x onerror=alert(1)>` and [x](http://e.example)"))
    assert "<img" not in evil and "<a " not in evil  # still text, never markup


def _fit(threshold_ms: float) -> PsychometricFitter:
    levels = np.array([200.0, 400.0, 800.0, 1_600.0, 3_200.0, 6_400.0])
    p = 1 / (1 + np.exp(-(np.log(levels) - np.log(threshold_ms)) / 0.4))
    n = np.full(levels.size, 20)
    return PsychometricFitter(guess=0.0, lapse=0.0).fit(
        levels, np.round(p * n), n, n_boot=20, seed=0
    )


def test_the_per_participant_figure_keeps_p_yes_clear_of_the_ticks_at_n_2():
    fig = report_figures.psychometric_grid_figure(
        {"P-1": _fit(900.0), "P-2": _fit(1_500.0)}, "ttft_ms"
    )
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    label = fig._supylabel.get_window_extent(renderer)
    for tick in fig.axes[0].get_yticklabels():
        if tick.get_text():
            box = tick.get_window_extent(renderer)
            assert label.x1 <= box.x0, (label, box, tick.get_text())  # left of it, no overlap


def test_figures_are_cropped_exactly_as_matplotlib_crops_them():
    import io

    import matplotlib.pyplot as plt

    fits = {"P-1": _fit(900.0), "P-2": _fit(1_500.0), "P-3": _fit(2_500.0)}
    expected = io.BytesIO()
    reference = report_figures.psychometric_grid_figure(fits, "ttft_ms")
    reference.savefig(expected, format="png", dpi=figure_png.DPI, bbox_inches="tight")
    plt.close(reference)
    own = figure_png.png_bytes(report_figures.psychometric_grid_figure(fits, "ttft_ms"))
    assert own == expected.getvalue()


def _png_pixels(data: bytes) -> np.ndarray:
    import io

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"))


def test_the_per_participant_grid_is_cropped_to_its_ink_and_loses_nothing():
    """Drawn once and cropped to its inked pixels: the grid keeps everything it draws on
    its canvas (matplotlib's own tight box lies inside it, at 3 and at 30 panels, with
    separated people's two-line titles), and the PNG is the drawing's inked region plus the
    margin, pixel for pixel."""
    import matplotlib.pyplot as plt

    pad = round(figure_png.TIGHT_PAD_IN * figure_png.DPI)
    for n in (3, 30):
        fits = {f"P-{i:03d}": _fit(600.0 + 100 * i) for i in range(n)}
        brackets = {"P-001": (650.0, 1_000.0)}
        fig = report_figures.psychometric_grid_figure(fits, "ttft_ms", brackets=brackets)
        fig.canvas.draw()
        box = fig.get_tightbbox(fig.canvas.get_renderer())
        canvas = fig.bbox
        assert box.x0 >= 0 and box.y0 >= 0, (n, box)  # in inches; nothing off the canvas
        assert box.x1 * fig.dpi <= canvas.x1 and box.y1 * fig.dpi <= canvas.y1, (n, box)
        drawn = np.asarray(fig.canvas.buffer_rgba()).copy()
        plt.close(fig)
        png = report_figures.psychometric_grid(fits, "ttft_ms", brackets=brackets)
        ink = (drawn != drawn[0, 0]).any(axis=2)
        rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        top, left = max(rows[0] - pad, 0), max(cols[0] - pad, 0)
        region = drawn[top : rows[-1] + 1 + pad, left : cols[-1] + 1 + pad]
        np.testing.assert_array_equal(_png_pixels(png), region)


def test_a_figure_whose_ink_reaches_the_canvas_edge_takes_the_tight_crop():
    import matplotlib.pyplot as plt

    def overflowing():
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.set_title("a title far too long for a figure two inches wide, running off it")
        return fig

    assert figure_png.inked_png_bytes(overflowing()) == figure_png.png_bytes(overflowing())


def test_a_mixed_report_marks_simulated_rows_and_counts_in_the_singular(tmp_path):
    trials = simulate_trial_table(n_participants=4, reps=2, seed=3, failing_participant=False)
    simulated_id = trials["participant"].iloc[0]
    trials["simulated"] = (trials["participant"] == simulated_id).astype(int)  # one of four
    folder = write_export_folder(tmp_path / "e", trials)
    sessions = pd.read_csv(folder / "sessions.csv")
    sessions["env_timing_warnings"] = [ADVICE, "", "", ""]
    sessions.to_csv(folder / "sessions.csv", index=False)
    data = analyse(load_trial_table(folder), ReportOptions(n_boot=20))
    md = write_report(data, tmp_path / "r")["markdown"].read_text(encoding="utf-8")
    html = markdown.markdown(md, extensions=["tables"])
    assert f"{simulated_id} (simulated)" in html  # in the per-participant tables
    assert "<code>uxlab run --nice 10</code>" in html
    assert " 1 abandoned trials" not in md and " 1 trials" not in md


def test_one_unrated_abandoned_trial_is_said_in_the_singular():
    from types import SimpleNamespace

    from analysis.report.data import RatingPart
    from analysis.report.ratings_part import mos_blocks
    from analysis.report.render import render_markdown

    part = RatingPart("q_speed", 5, 4.0, "the study file", pd.DataFrame(), None, None, None, 1)
    data = SimpleNamespace(stimulus="ttft_ms", options=SimpleNamespace(n_boot=20), failed_parts=[])
    text = " ".join(render_markdown(mos_blocks(data, part)[:3], "t").split())
    assert "1 abandoned trial has no rating" in text
