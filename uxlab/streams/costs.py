"""The costs `uxlab inspect --prices` shows: per recording, per source, per task.

The inspected recordings' facts (`uxlab.streams.billing`, with the metrics' decode rate)
go through `pricing.corpus.price_corpus`, the path `uxlab report --score --prices` takes
too; chain files (`*.chain.json`) under the inspected paths are tasks, and every other
recording a task of one request.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

from pricing.corpus import PricedCorpus, RecordingFacts, price_corpus
from pricing.sheet import PriceChoice
from uxlab.streams.inspect_load import Inspection


def price_inspection(
    found: Inspection,
    choice: PriceChoice,
    paths: Sequence[str | Path],
    estimate: bool = False,
) -> PricedCorpus:
    """Price every recording of `found` (read `with_billing`) and cost the tasks."""
    decode = list(found.table.get("decode_tokens_per_s", []))
    facts: list[RecordingFacts] = []
    for i, (path, one) in enumerate(zip(found.paths, found.billing, strict=True)):
        if one is None:  # read without billing: nothing to price it by
            one = RecordingFacts(str(path), "unknown", None, None, None)
        rate = float(decode[i]) if i < len(decode) else math.nan
        facts.append(dataclasses.replace(one, path=str(path), decode_tokens_per_s=rate))
    return price_corpus(facts, choice, paths, estimate)
