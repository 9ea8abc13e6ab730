"""The checks the thin commands hand to their packages: `uxlab serve`'s guard settings
(`uxlab.live.serve_setup`) and `uxlab host`'s browser settings (`uxlab.host.web_run`)
refuse a bad value naming its option, and build what the server and host run with."""

from __future__ import annotations

import pytest

from uxlab.errors import UxlabError
from uxlab.host.web_run import WebHostError, web_hosting
from uxlab.live.serve import ServeError
from uxlab.live.serve_guard import LOOPBACK_HOSTS
from uxlab.live.serve_setup import guard_settings
from uxlab.live.upstream import UpstreamConfig, UpstreamError
from uxlab.shaping import Profile

LIMITS = {"max_body_mb": 4.0, "header_timeout_s": 10.0, "max_connections": 256,
          "max_slow_per_client": 16}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "value", "option"),
    [
        ("max_body_mb", 0.0, "--max-body-mb 0: must be > 0"),
        ("header_timeout_s", -1.0, "--header-timeout-s -1: must be > 0"),
        ("max_connections", 0, "--max-connections 0: must be >= 1"),
        ("max_slow_per_client", 0, "--max-slow-per-client 0: must be >= 1"),
        ("max_body_mb", float("nan"), "--max-body-mb nan: must be > 0"),
        # an infinite body limit was an internal error (OverflowError) before the model
        ("max_body_mb", float("inf"), "--max-body-mb inf: must be at most 1024"),
        ("max_connections", 10**11, "--max-connections 100000000000: must be at most 1000000"),
    ],
)
def test_a_bad_serve_limit_is_refused_naming_its_option(name, value, option):
    with pytest.raises(ServeError, match=option):
        guard_settings("127.0.0.1", allow_host=[], cors=[], **{**LIMITS, name: value})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"url": "localhost:8000/v1"}, "--upstream 'localhost:8000/v1': expected an http://"),
        ({"api": "opnai"}, "--upstream-api 'opnai': use one of openai, anthropic"),
        ({"key_env": "A B"}, "--upstream-key-env 'A B': expected a variable name"),
    ],
)  # fmt: skip
def test_a_bad_upstream_option_is_refused_naming_it(options, message):
    profile = Profile.from_table({"ttft": "800", "itl": "lognormal:median=30,sigma=0.5"})
    with pytest.raises(UpstreamError) as caught:
        UpstreamConfig(**{"url": "http://127.0.0.1:9/v1", **options}, profile=profile)
    assert str(caught.value).startswith(message)


def test_serve_accepts_loopback_the_bound_address_and_the_allowed_names():
    local = guard_settings("127.0.0.1", allow_host=[" Lab.Example "], cors=["*"], **LIMITS)
    assert local.allowed_hosts == set(LOOPBACK_HOSTS) | {"lab.example"}
    assert local.cors_origins == ["*"] and local.max_body_bytes == 4 * 1024 * 1024
    bound = guard_settings("fd00::7", allow_host=[], cors=[], **LIMITS)
    assert "[fd00::7]" in bound.allowed_hosts  # an IPv6 Host header is bracketed
    anywhere = guard_settings("0.0.0.0", allow_host=[], cors=[], **LIMITS)
    assert anywhere.allowed_hosts == set(LOOPBACK_HOSTS)  # not a name a client sends


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((70000, None, 20, None, None), "--port 70000: a TCP port is 0..65535"),
        ((8350, 0, 20, None, None), "--fps 0: the frame cap must be >= 1"),
        ((8350, None, 0, None, None), "--max-open 0: at least 1"),
        ((8350, None, 20, "1PID", None), "--enrol '1PID': name the link's query parameter"),
        ((8350, None, 20, None, "https://x.example/done"), "--completion-url: only with --enrol"),
        ((8350, None, 20, "PID", "ftp://x.example/"), "give a full http\\(s\\) URL"),
    ],
)
def test_a_bad_host_option_is_refused_before_anything_opens(args, message):
    with pytest.raises(WebHostError, match=message) as refused:
        web_hosting(*args)
    assert isinstance(refused.value, UxlabError)  # exit status 2, one line


def test_the_host_frame_cap_comes_from_the_option_else_uxlab_fps_else_240(monkeypatch):
    monkeypatch.delenv("UXLAB_FPS", raising=False)
    assert web_hosting(0, None, 20, None, None).fps == 240
    monkeypatch.setenv("UXLAB_FPS", "120")
    assert web_hosting(0, None, 20, None, None).fps == 120
    assert web_hosting(0, 60, 20, None, None).fps == 60
    done = "https://app.example/complete?cc=X"
    hosting = web_hosting(0, None, 5, "PROLIFIC_PID", done)
    assert (hosting.max_open, hosting.enrol, hosting.completion_url) == (5, "PROLIFIC_PID", done)
