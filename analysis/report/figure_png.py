"""A report figure as PNG bytes: matplotlib on its Agg backend at the report's size and
dpi, cropped to what it draws (matplotlib's tight box, or the inked pixels of a figure that
keeps everything on its canvas)."""

from __future__ import annotations

import io
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DPI = 110
"""The dots per inch of every report figure."""


def agg_pyplot() -> ModuleType:
    """matplotlib.pyplot on the Agg backend with the report's font sizes (imported when a
    figure is drawn)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "figure.dpi": DPI})
    return plt


TIGHT_PAD_IN = 0.1
"""The margin around the drawn content, in inches (matplotlib's `savefig.pad_inches`)."""


def png_bytes(fig: Figure) -> bytes:
    """`fig` as PNG bytes, cropped to what is drawn plus `TIGHT_PAD_IN`: the same bytes as
    `savefig(bbox_inches="tight")`, the box measured on the figure's own renderer (at `DPI`,
    the figure's dpi) rather than on the throwaway one `savefig` makes for it (a tenth of a
    report's writing time; `tests/test_report_reads_well.py` checks the bytes are the same).
    The tight box may reach past the figure's canvas (a long tick label, a legend below the
    axes): the saved image then grows to hold it."""
    from matplotlib.backend_bases import RendererBase
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # `agg_pyplot` chose Agg
    renderer: Callable[[], RendererBase] = canvas.get_renderer  # untyped in matplotlib
    buf = io.BytesIO()
    box = fig.get_tightbbox(renderer()).padded(TIGHT_PAD_IN)
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches=box)
    agg_pyplot().close(fig)
    return buf.getvalue()


def inked_png_bytes(fig: Figure) -> bytes:
    """`fig` as PNG bytes, drawn once and cropped to its inked pixels plus `TIGHT_PAD_IN`,
    for a figure whose layout keeps everything on its canvas (`psychometric_grid`: margins
    set in inches; `tight_layout`). Measuring matplotlib's tight box lays out every axis's
    ticks once more, which for small multiples costs more than drawing them.
    Ink that reaches the canvas's edge may run past it (a participant's long title): that
    figure takes `png_bytes`, whose box grows the image to hold it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image  # matplotlib's own PNG writer

    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # `agg_pyplot` chose Agg
    draw: Callable[[], None] = canvas.draw  # untyped in matplotlib
    buffer_rgba: Callable[[], memoryview] = canvas.buffer_rgba
    draw()
    pixels = np.asarray(buffer_rgba())
    background = np.round(np.array(fig.get_facecolor()) * 255).astype(np.uint8)
    ink = (pixels != background).any(axis=2)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    height, width = ink.shape
    at_edge = rows.size and (
        rows[0] == 0 or cols[0] == 0 or rows[-1] == height - 1 or cols[-1] == width - 1
    )
    if not rows.size or at_edge:  # nothing drawn, or ink that may run past the canvas
        return png_bytes(fig)
    pad = round(TIGHT_PAD_IN * DPI)
    top, bottom = max(rows[0] - pad, 0), min(rows[-1] + 1 + pad, height)
    left, right = max(cols[0] - pad, 0), min(cols[-1] + 1 + pad, width)
    buf = io.BytesIO()
    Image.fromarray(pixels[top:bottom, left:right]).save(buf, format="png", dpi=(DPI, DPI))
    agg_pyplot().close(fig)
    return buf.getvalue()
