"""`uxlab simulate` refuses a live study: bots on a virtual clock must not send real requests."""

from __future__ import annotations

from pathlib import Path

import pytest
from live_servers import serve_in_thread

from uxlab.cli import main
from uxlab.live.serve import ServeConfig, build_app
from uxlab.streams import Chunk, End, Header, Recording

LIVE_STUDY = Path(__file__).resolve().parents[1] / "studies" / "live-openai.toml"


def answer() -> Recording:
    return Recording(Header(id="a"), [Chunk(10, "Hi", n_tokens=1)], End(20, "stop"))


@pytest.mark.parametrize("through_ui", [False, True])
def test_simulate_refuses_a_live_study_and_sends_nothing(tmp_path, capsys, through_ui):
    # The study's model is a real server on loopback: it must see no request at all.
    config = ServeConfig([answer()], lambda r, s: r)
    with serve_in_thread(build_app(config)) as base:
        study = tmp_path / "live.toml"
        study.write_text(LIVE_STUDY.read_text().replace("http://127.0.0.1:8765/v1", base + "/v1"))
        db = tmp_path / "live.sqlite"
        argv = ["simulate", str(study), "-n", "1", "--db", str(db)]
        assert main(argv + (["--through-ui"] if through_ui else [])) == 2
    err = capsys.readouterr().err
    assert f"{study}: cannot simulate study 'live-openai'" in err
    assert "live model" in err and "recorded corpus" in err
    assert len(config.served) == 0 and not db.exists()


def test_demo_refuses_a_live_study_too(tmp_path, capsys):
    config = ServeConfig([answer()], lambda r, s: r)
    with serve_in_thread(build_app(config)) as base:
        study = tmp_path / "live.toml"
        study.write_text(LIVE_STUDY.read_text().replace("http://127.0.0.1:8765/v1", base + "/v1"))
        out = tmp_path / "demo"
        assert main(["demo", "--study", str(study), "-o", str(out), "--participants", "2"]) == 2
    err = capsys.readouterr().err
    assert f"{study}: cannot simulate study 'live-openai'" in err
    assert len(config.served) == 0 and not any(out.glob("*.sqlite"))
