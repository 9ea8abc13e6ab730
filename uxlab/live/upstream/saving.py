"""Recording `uxlab serve --upstream`'s exchanges: the stream as received (a corpus of the
real traffic) and the stream as served (re-timed, with due, arrival and shown times)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from uxlab.live.live_request import LiveResult
from uxlab.live.record import free_id, save_result
from uxlab.live.upstream.config import Exchange
from uxlab.streams.replay_file import safe_filename, write_replay

RECEIVED_DIR = "received"
"""Under `--record DIR`: the upstream streams as received (a corpus as they are)."""
SERVED_DIR = "served"
"""Under `--record DIR`: the streams as served (re-timed, with due/arrival/shown times)."""


def save_exchange(outdir: Path, exchange: Exchange, result: LiveResult | None) -> list[Path]:
    """Write the upstream stream as received and the stream as served."""
    received_dir, served_dir = outdir / RECEIVED_DIR, outdir / SERVED_DIR
    rid = _free_id(
        received_dir,
        served_dir,
        f"upstream-{time.strftime('%Y%m%d-%H%M%S')}-{exchange.request_index:05d}",
    )
    saved: list[Path] = []
    record = result.record if result is not None else None
    source: dict[str, Any] = {"kind": "live", "model": exchange.model}
    if record is not None:
        record.recording.header.id = rid
        source = dict(record.recording.header.source)
        saved.append(save_result(record, received_dir))
    served = exchange.schedule.to_recording()
    served.header.id = f"{rid}.served"
    served.header.source = source
    assert served.header.retime is not None
    served.header.retime["from"] = rid if record is not None else None
    served.header.retime["profile_name"] = exchange.profile_name
    served.header.extra = {
        "served": {
            "request_index": exchange.request_index,
            "wire": exchange.wire,
            "request_sent_ms": result.request_sent_ms if result is not None else None,
            "upstream_status": exchange.status,
            "upstream_message": exchange.message,
            "client_cancelled": exchange.cancelled,
            "cut_by_profile": exchange.schedule.cut_by_profile,
            **exchange.violations,
            "shown": [dataclasses.asdict(s) for s in exchange.schedule.shown],
        }
    }
    if record is None:
        served.header.extra["served"]["note"] = (
            "the upstream stream was not kept: the request was cancelled before it ended"
        )
    served_dir.mkdir(parents=True, exist_ok=True)
    path = served_dir / f"{safe_filename(served.header.id)}.jsonl"
    saved.append(write_replay(served, path))
    return saved


def _free_id(received_dir: Path, served_dir: Path, base: str) -> str:
    """`base`, or `base-2`, `base-3`...: an id no file in either folder has yet."""
    return free_id(
        base,
        lambda rid: any(
            p.exists()
            for p in (
                received_dir / f"{rid}.jsonl",
                received_dir / f"{rid}.sse",
                served_dir / f"{rid}.served.jsonl",
            )
        ),
    )
