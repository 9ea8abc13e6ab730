"""What `uxlab serve` plays, from its options: a corpus on a shaped schedule, or a real
model re-timed (`--upstream`); who may call it (`guard_settings`). Each returns the server's
`ServeConfig` and the words its banner says about it; a bad option is a `ServeError`
naming it. (Serving a study participant's trials: `uxlab.study.serve_picker`.)"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from uxlab.live.serve.config import ServeConfig, ServeError
from uxlab.live.serve_guard import LOOPBACK_HOSTS, GuardSettings
from uxlab.live.serve_model import (
    LIMIT_WORDS,
    ServeLimits,
    checked,
)
from uxlab.shaping import Profile, shape


def corpus_config(
    corpus_path: str, profile: Profile, seed: int, token: str | None
) -> tuple[ServeConfig, str]:
    """Serve the recordings of `corpus_path` shaped with `profile`, request i with seed
    `seed + i`; unreadable files are said on stderr and skipped."""
    from uxlab.player import PlaybackError
    from uxlab.streams import load_corpus

    corpus = load_corpus(corpus_path)
    for err in corpus.errors:
        print(f"skipped: {err}", file=sys.stderr)
    if not corpus.recordings:
        raise ServeError(f"{corpus_path}: no playable replay files")
    for rec in corpus.recordings:  # fail now, not on the first request
        untimed = [c for c in shape(rec, profile, seed=seed).chunks if c.t_ms is None]
        if untimed:
            raise PlaybackError(
                f"{rec.id}: {len(untimed)} chunk(s) have no time; give "
                "--ttft and --itl to serve text-only recordings"
            )
    config = ServeConfig(
        recordings=corpus.recordings,
        shape=lambda rec, s: shape(rec, profile, seed=s),
        seed=seed,
        token=token,
    )
    what = (
        f"{len(corpus.recordings)} recording(s) from {corpus_path} (profile: "
        f"{profile.describe()}; request i uses seed {seed}+i)"
    )
    return config, what


def upstream_config(
    url: str,
    *,
    api: str,
    profile: Profile,
    named_profiles: list[str],
    key_env: str | None,
    record_dir: str | None,
    seed: int,
    token: str | None,
) -> tuple[ServeConfig, str]:
    """Forward each request to the real model at `url` and re-time its stream onto
    `profile` (or a named profile a model name picks, `MODEL@NAME`)."""
    from uxlab.live.record import origin_of
    from uxlab.live.upstream import (
        UpstreamConfig,
        UpstreamProxy,
        default_key_env,
        parse_named_profile,
    )

    named = dict(parse_named_profile(spec, profile) for spec in named_profiles)
    upstream = UpstreamConfig(
        url=url,
        api=api,
        profile=profile,
        named=named,
        key_env=key_env,
        record_dir=Path(record_dir) if record_dir else None,
        seed=seed,
    )
    proxy = UpstreamProxy(upstream, server_token=token)
    config = ServeConfig(
        recordings=[], shape=lambda r, s: r, seed=seed, token=token, upstream=proxy
    )
    names = "".join(f"; @{n}: {p.describe()}" for n, p in named.items())
    if key_env and not os.environ.get(key_env):
        raise ServeError(
            f"--upstream-key-env {key_env}: that variable is not set; "
            "export it, or leave the option out to pass on each client's own key"
        )
    fallback = (
        "no key if unset (the client's header holds --token)"
        if token
        else "else the client's header"
    )
    what = (
        f"{api} upstream {origin_of(url)} re-timed "
        f"(profile: {profile.describe()}"
        f"{names}; key from ${key_env or default_key_env(api)}, {fallback}"
        f"{'; recording to ' + record_dir if record_dir else ''})"
    )
    return config, what


def guard_settings(
    host: str,
    *,
    allow_host: list[str],
    cors: list[str],
    max_body_mb: float,
    header_timeout_s: float,
    max_connections: int,
    max_slow_per_client: int,
) -> GuardSettings:
    """Allowed Host names and the body limit from the options (origins: `--cors`); the
    limits' values are checked here (`serve_model.ServeLimits`), each error naming its option."""
    limits = checked(
        {
            "max_body_mb": max_body_mb,
            "header_timeout_s": header_timeout_s,
            "max_connections": max_connections,
            "max_slow_per_client": max_slow_per_client,
        },
        ServeLimits,
        LIMIT_WORDS,
        ServeError,
    )
    hosts = set(LOOPBACK_HOSTS) | {h.strip().lower() for h in allow_host}
    if host not in ("0.0.0.0", "::", ""):
        hosts.add(f"[{host.lower()}]" if ":" in host else host.lower())
    return GuardSettings(
        allowed_hosts=hosts,
        cors_origins=list(cors),
        max_body_bytes=int(limits.max_body_mb * 1024 * 1024),
    )
