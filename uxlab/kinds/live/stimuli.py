"""A live study's stimuli: `[stimuli] live = {...}` read and checked, and its prompt corpus.

```toml
[stimuli]
live = { api = "openai", url = "http://127.0.0.1:8765/v1", model = "served",
         api_key_env = "UXLAB_LIVE_KEY", prompts = ["Explain TCP in two sentences."] }
# or prompt_from = "participant": the participant types each prompt
```

The design assigns prompts as it assigns recordings: the corpus holds one placeholder
stream per prompt (`live-p01`, ...; `live-participant` when the participant types), whose
request carries the prompt and whose synthetic text (`PLACEHOLDER_TOKENS` tokens every
`PLACEHOLDER_ITL_MS`) only serves duration estimates. What a trial plays is the live answer
(`uxlab.live.live_schedule`). A key never goes in a study file: only the name of the
environment variable that holds it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uxlab.live.clients import APIS
from uxlab.live.live_schedule import LiveEndpoint
from uxlab.streams.corpus import Corpus
from uxlab.streams.recording import Chunk, End, Header, Recording

LIVE_KEYS = ("api", "url", "model", "api_key_env", "prompts", "prompt_from", "params")
PROMPT_FROM = ("given", "participant")
PLACEHOLDER_TOKENS = 150
PLACEHOLDER_ITL_MS = 30.0
PARTICIPANT_ID = "live-participant"
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class LiveStimuli:
    """Where a live study sends prompts, and which prompts (None: the participant types)."""

    endpoint: LiveEndpoint
    prompts: tuple[str, ...] | None

    @property
    def prompt_from(self) -> str:
        return "participant" if self.prompts is None else "given"


ErrorFactory = Callable[[str, str], Exception]
"""(key path, problem) -> the study error to raise."""


def parse_live(value: Any, err: ErrorFactory) -> LiveStimuli:
    """Check `[stimuli].live`; errors name the key path and what would be right."""
    where = "[stimuli].live"
    if not isinstance(value, dict):
        raise err(where, "must be a table: live = { api = ..., url = ..., model = ..., ... }")
    for key in value:
        if key in ("api_key", "key", "token"):
            raise err(
                f"{where}.{key}",
                "keys never go in a study file: name the environment variable that holds "
                'it with api_key_env = "MY_KEY_VAR"',
            )
        if key not in LIVE_KEYS:
            raise err(f"{where}.{key}", "unknown key (one of " + ", ".join(LIVE_KEYS) + ")")

    def text(key: str, required: bool = True) -> str | None:
        if key not in value:
            if required:
                raise err(f"{where}.{key}", "missing (required)")
            return None
        v = value[key]
        if not isinstance(v, str) or not v.strip():
            raise err(f"{where}.{key}", f"{v!r} is not a non-empty string")
        return v

    api = text("api")
    if api not in APIS:
        raise err(f"{where}.api", f"{api!r} is not one of {', '.join(APIS)}")
    url = text("url")
    assert url is not None
    if not re.match(r"^https?://[^/\s]+", url):
        raise err(
            f"{where}.url", f"{url!r} is not an http(s) base URL, e.g. http://127.0.0.1:8765/v1"
        )
    model = text("model")
    env = text("api_key_env", required=False)
    if env is not None and not _ENV_RE.match(env):
        raise err(
            f"{where}.api_key_env",
            f"{env!r} is not an environment variable name (the key itself never goes here)",
        )
    params = value.get("params", {})
    if not isinstance(params, dict):
        raise err(f"{where}.params", f"{params!r} is not a table, e.g. {{ max_tokens = 300 }}")
    prompt_from = text("prompt_from", required=False) or "given"
    if prompt_from not in PROMPT_FROM:
        raise err(f"{where}.prompt_from", f"{prompt_from!r} is not one of given, participant")
    prompts: tuple[str, ...] | None = None
    if prompt_from == "participant":
        if "prompts" in value:
            raise err(f"{where}.prompts", 'not used with prompt_from = "participant"')
    else:
        raw = value.get("prompts")
        if raw is None:
            raise err(
                f"{where}.prompts",
                'missing: give prompts = ["...", ...] or prompt_from = "participant"',
            )
        if not isinstance(raw, list) or not raw:
            raise err(f"{where}.prompts", f"{raw!r} is not a non-empty list of prompts")
        for i, p in enumerate(raw):
            if not isinstance(p, str) or not p.strip():
                raise err(f"{where}.prompts[{i}]", f"{p!r} is not a non-empty string")
        prompts = tuple(raw)
    assert api is not None and model is not None
    return LiveStimuli(LiveEndpoint(api, url, model, env, dict(params)), prompts)


def placeholder(rid: str, prompt: str, endpoint: LiveEndpoint) -> Recording:
    """A stand-in stream for one prompt (design and duration estimates only)."""
    chunks = [
        Chunk(t_ms=PLACEHOLDER_ITL_MS * (i + 1), text=" answer", n_tokens=1)
        for i in range(PLACEHOLDER_TOKENS)
    ]
    header = Header(
        id=rid,
        source={
            "kind": "live",
            "api": endpoint.api,
            "model": endpoint.model,
            "origin": endpoint.url,
        },
        request={"messages": [{"role": "user", "content": prompt}]},
        text_source="synthetic",
    )
    return Recording(header, list(chunks), End(chunks[-1].t_ms, "stop"))


def live_corpus(live: LiveStimuli, root: Path) -> Corpus:
    """One placeholder per prompt (`live-p01`...), or `live-participant` when typed."""
    if live.prompts is None:
        recs = [placeholder(PARTICIPANT_ID, "", live.endpoint)]
    else:
        recs = [
            placeholder(f"live-p{i + 1:02d}", p, live.endpoint) for i, p in enumerate(live.prompts)
        ]
    return Corpus(root, recs, [root] * len(recs))
