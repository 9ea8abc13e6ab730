"""What the upstream proxy is configured with, and what it keeps of each exchange."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uxlab.errors import UxlabError
from uxlab.live.clients import DEFAULT_KEY_ENV
from uxlab.live.live_schedule import LiveSchedule, live_profile_problem
from uxlab.live.record import RecordOptions
from uxlab.live.serve_model import UPSTREAM_APIS, UPSTREAM_WORDS, UpstreamOptions, checked
from uxlab.shaping import Profile

__all__ = ["UPSTREAM_APIS", "Exchange", "UpstreamConfig", "UpstreamError", "default_key_env"]

EXCHANGES_KEPT = 1000


class UpstreamError(UxlabError):
    """A proxy set-up that cannot work (bad upstream API, profile or record folder)."""


@dataclass
class UpstreamConfig:
    """Where requests go and how their answers are timed and kept."""

    url: str
    """The upstream's base URL, e.g. `https://api.openai.com/v1`."""
    api: str = "openai"
    profile: Profile = field(default_factory=Profile)
    named: dict[str, Profile] = field(default_factory=dict)
    key_env: str | None = None
    """Variable holding the upstream key (default per API, e.g. OPENAI_API_KEY)."""
    record_dir: Path | None = None
    seed: int = 0
    options: RecordOptions = field(default_factory=RecordOptions)
    on_done: Callable[[Exchange], None] | None = None
    """Called once per exchange when it is over (e.g. to log schedule violations)."""

    def __post_init__(self) -> None:
        options = {"url": self.url, "api": self.api, "key_env": self.key_env}
        checked(options, UpstreamOptions, UPSTREAM_WORDS, UpstreamError)
        problem = live_profile_problem(self.profile)
        if problem is not None:
            raise UpstreamError(
                "--upstream needs a sampled timing: give --ttft and --itl (e.g. --ttft 800 "
                f"--itl lognormal:median=30,sigma=0.5); {problem}"
            )


@dataclass
class Exchange:
    """One proxied request: what was asked, the profile, the schedule and how it ended."""

    request_index: int
    wire: str
    model: str
    """The upstream model (suffix removed)."""
    profile_name: str
    profile: Profile
    schedule: LiveSchedule
    t0_ms: float
    status: int | None = None
    """The upstream's HTTP status (None: no response)."""
    message: str | None = None
    """What went wrong upstream, if anything (the recorder's one-line message)."""
    cancelled: bool = False
    """The client went away before the end."""
    saved: list[Path] = field(default_factory=list)
    served: Any = None
    """The server's `Served` entry; its `log` is the player's (handed times) once over."""

    @property
    def violations(self) -> dict[str, float | int]:
        return self.schedule.violations()


def default_key_env(api: str) -> str:
    """The variable a key is read from when `--upstream-key-env` is not given."""
    return DEFAULT_KEY_ENV[api]
