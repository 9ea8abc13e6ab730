"""Temporary stand-in for `uxlab.shaping` until it lands (same names; removed then)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from uxlab.errors import UxlabError

FACTOR_NAMES: dict[str, str] = {
    "ttft_ms": "time to first token",
    "headers_ms": "time to response headers",
    "itl_ms": "central inter-token latency",
    "jitter": "spread of the ITL model",
    "itl_scale": "ITL multiplier",
    "tokens_per_s": "output rate",
    "rho": "autocorrelation of gaps",
    "chunk_tokens": "tokens per chunk",
    "stall_ms": "stall length",
    "stall_rate_per_s": "stalls per second",
    "error_at_token": "inject an error at token N",
}


class ProfileError(UxlabError, ValueError):
    pass


@dataclass(frozen=True)
class Profile:
    table: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_table(cls, table: dict, where: str = "profile") -> Profile:
        return cls(dict(table))

    def to_table(self) -> dict[str, Any]:
        return dict(self.table)

    def with_factors(self, levels: dict[str, float]) -> Profile:
        return Profile({**self.table, **levels})
