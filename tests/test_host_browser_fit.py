"""The participant's browser page fills its window with the terminal: at 1000x700 the
screenshot shows no band of page background under (or beside) the terminal wider than one
character cell, so nothing looks broken or cut off."""

from __future__ import annotations

import io

import numpy as np
import pytest
from helpers.browser import WebHost, launch_chromium, wait_screen
from helpers.studies import tiny_study
from PIL import Image
from playwright.async_api import async_playwright

from uxlab.store import Store
from uxlab.store.invitations import create_invitations

pytestmark = pytest.mark.slow


def page_background_band(png: bytes, side: str) -> int:
    """How many pixel rows (bottom) or columns (right) at the edge are the page's own black."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    lines = pixels[::-1] if side == "bottom" else pixels.transpose(1, 0, 2)[::-1]
    n = 0
    for line in lines:
        if line.max() > 0:
            break
        n += 1
    return n


async def test_the_terminal_fills_a_1000x700_window(tmp_path):
    study = tiny_study(tmp_path, levels="20", repeats=1, attention=False)
    db = tmp_path / "web.sqlite"
    with Store.open(db) as store:
        (inv,) = create_invitations(store, "tiny", 1)
    host = WebHost(study, db)
    try:
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            page = await browser.new_page(viewport={"width": 1000, "height": 700})
            # a font whose line box is taller than the terminal's cell (as on machines where
            # the monospace fallback has a tall line height): the size must come from the
            # terminal's own cells, not from a line of text
            await page.add_init_script(
                """(() => {
                  const rect = Element.prototype.getBoundingClientRect;
                  Element.prototype.getBoundingClientRect = function () {
                    const r = rect.call(this);
                    if (this.parentNode !== document.body || this.tagName !== "SPAN") return r;
                    return new DOMRect(r.x, r.y, r.width, r.height * 1.4);  // a tall line box
                  };
                })();"""
            )
            await page.goto(host.url + "#" + inv.code)
            await wait_screen(page, lambda s: "Press a if you agree" in s)
            cell_h = await page.evaluate(
                "document.querySelector('.xterm-screen').getBoundingClientRect().height"
                " / document.querySelectorAll('.xterm-rows > div').length"
            )
            png = await page.screenshot()
            (tmp_path / "page.png").write_bytes(png)
            await browser.close()
    finally:
        host.stop()
    # the page's padding (4 px) plus less than one cell: never a band of rows missing
    assert page_background_band(png, "bottom") < 4 + cell_h, tmp_path / "page.png"
    assert page_background_band(png, "right") < 4 + cell_h
