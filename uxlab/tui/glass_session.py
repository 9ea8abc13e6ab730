"""Starting a glass probe for an app in an X terminal window (`uxlab run/replay --glass`)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from uxlab.errors import UxlabError
from uxlab.glass.availability import glass_problem
from uxlab.glass.feed import GlassFeed
from uxlab.tui.paint_probe import PaintProbe


class GlassUnavailable(UxlabError):
    """Glass timing cannot run here (the message says why, in plain words)."""


def check_glass(env: Mapping[str, str] | None = None) -> None:
    """Refuse (`GlassUnavailable`) where the glass cannot be timed."""
    problem = glass_problem(os.environ if env is None else env)
    if problem is not None:
        raise GlassUnavailable(f"glass timing is not available here: {problem}")


def start_glass(probe: PaintProbe, env: Mapping[str, str] | None = None) -> GlassFeed:
    """Start the probe on this terminal's window and have `probe` mark frames for it (on
    the app's loop, once it runs)."""
    env = os.environ if env is None else env
    check_glass(env)
    feed = GlassFeed.start(int(env["WINDOWID"]), dict(env))
    probe.start_glass(feed)
    return feed
