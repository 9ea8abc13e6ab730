"""The price sheet: what a user pays per million tokens of each model, in a TOML file they write.

```toml
[sheet]
currency = "USD"            # ISO 4217 code; every price is in it
date = 2026-12-01           # when these prices were read (a TOML date)
source = "our contract, appendix B"
example = false             # true: the outputs say the prices are examples

[[price]]
vendor = "openai"           # optional: matches any vendor when left out
model = "gpt-oss-20b"
aliases = ["openai/gpt-oss-20b"]   # optional: other names of the same model
input = 0.05                # per million input tokens (required)
cached_input = 0.025        # optional: cache reads; the input price when left out
cache_write = 0.0625        # optional: cache writes; the input price when left out
output = 0.20               # per million output tokens (required)
reasoning = 0.20            # optional: reasoning tokens; the output price when left out
date = 2026-11-30           # optional: this model's own date and source
source = "..."
```

A recording is priced by the entry whose `model` (or an alias) equals its `source.model`,
case-insensitively, and whose `vendor`, when given, equals its `source.vendor`; a recording
without a vendor matches an entry with one only by naming both, `vendor/model`
(`openai/gpt-oss-20b`, as benchmark exports name a model). `--price-as` overrides the match
(`PriceChoice`). Mistakes end as `PriceSheetError`, naming the file, the line and the field:
an unknown key, a price that is negative, not finite or absurd, a currency other than the
sheet's, an entry that matches what another matches.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_SHEET_BYTES = 4 * 1024 * 1024
"""A price sheet larger than this is refused unread."""
MAX_PRICE_PER_MILLION = 10_000.0
"""A price per million tokens above this is not a real price (a typo in the units)."""

SHEET_KEYS = ("currency", "date", "source", "example")
PRICE_KEYS = (
    "vendor",
    "model",
    "aliases",
    "input",
    "cached_input",
    "cache_write",
    "output",
    "reasoning",
    "currency",
    "date",
    "source",
)
RATE_KEYS = ("input", "cached_input", "cache_write", "output", "reasoning")


class PriceSheetError(ValueError):
    """A price sheet or a price choice that cannot be used: `<file>:<line>: <field>: <problem>`."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, problem: str):
        self.path, self.line, self.field, self.problem = str(path), line, field, problem
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.line, self.field, self.problem))


@dataclass(frozen=True)
class ModelPrice:
    """One model's prices per million tokens, in the sheet's currency."""

    model: str
    input: float
    output: float
    vendor: str | None = None
    aliases: tuple[str, ...] = ()
    cached_input: float | None = None
    cache_write: float | None = None
    reasoning: float | None = None
    currency: str = "USD"
    date: str = ""
    source: str = ""
    line: int | None = None
    """The line of its `[[price]]` header in the sheet."""

    @property
    def name(self) -> str:
        """How outputs and `--price-as` name the entry: `vendor/model`, or `model`."""
        return f"{self.vendor}/{self.model}" if self.vendor else self.model

    def rate(self, kind: str) -> float:
        """The price per million tokens of `kind` (a `RATE_KEYS` name), defaults applied."""
        if kind == "cached_input" or kind == "cache_write":
            value = getattr(self, kind)
            return self.input if value is None else float(value)
        if kind == "reasoning":
            return self.output if self.reasoning is None else self.reasoning
        return float(getattr(self, kind))

    def names(self) -> tuple[str, ...]:
        """Lower-cased names a recording's label can match (`model`, aliases, `vendor/...`)."""
        own = (self.model, *self.aliases)
        if self.vendor:
            own = own + tuple(f"{self.vendor}/{n}" for n in own)
        return tuple(n.lower() for n in own)


@dataclass(frozen=True)
class PriceSheet:
    """A checked price sheet."""

    path: Path
    currency: str
    date: str
    source: str
    prices: tuple[ModelPrice, ...]
    example: bool = False

    def describe(self) -> str:
        """One line naming the sheet, its date and source (and that its prices are examples)."""
        what = "EXAMPLE prices" if self.example else "prices"
        return f"{what}: {self.path.name}, {self.date}, {self.source}"

    def find(self, vendor: str | None, model: str | None) -> ModelPrice | None:
        """The entry that prices a recording of `vendor`/`model` (see the module docstring)."""
        if not model:
            return None
        wanted = model.lower()
        vendor_l = vendor.lower() if vendor else None
        for price in self.prices:
            own = {n.lower() for n in (price.model, *price.aliases)}
            if price.vendor is None:
                matched = wanted in own
            elif vendor_l is None:  # a recording without a vendor names it `vendor/model`
                matched = wanted in {f"{price.vendor.lower()}/{n}" for n in own}
            else:
                matched = vendor_l == price.vendor.lower() and wanted in own
            if matched:
                return price
        return None

    def entry(self, name: str) -> ModelPrice | None:
        """The entry `--price-as` names: its `name`, or a model name or alias of one entry."""
        for price in self.prices:
            if price.name.lower() == name.lower():
                return price
        found = [p for p in self.prices if name.lower() in p.names()]
        return found[0] if len(found) == 1 else None


# --- reading ---------------------------------------------------------------------------


_TOML_LINE = re.compile(r"\(at line (\d+), column \d+\)")
_CURRENCY = re.compile(r"^[A-Z]{3}$")


class _Lines:
    """Finds the line of a key in the sheet's `[sheet]` table or its n-th `[[price]]`."""

    def __init__(self, text: str) -> None:
        self.tables: list[tuple[str, int, int]] = []  # (name, index, line of the header)
        self.keys: dict[tuple[str, int, str], int] = {}
        name, index, counts = "", 0, {"price": 0}
        for no, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if m := re.match(r"^\[\[\s*([A-Za-z0-9_.-]+)\s*\]\]", line):
                name = m.group(1)
                index = counts.get(name, 0)
                counts[name] = index + 1
                self.tables.append((name, index, no))
            elif m := re.match(r"^\[\s*([A-Za-z0-9_.-]+)\s*\]", line):
                name, index = m.group(1), 0
                self.tables.append((name, 0, no))
            elif m := re.match(r"^([A-Za-z0-9_-]+|\"[^\"]*\")\s*=", line):
                self.keys.setdefault((name, index, m.group(1).strip('"')), no)

    def key(self, table: str, index: int, key: str | None) -> int | None:
        if key is not None and (table, index, key) in self.keys:
            return self.keys[(table, index, key)]
        return self.header(table, index)

    def header(self, table: str, index: int = 0) -> int | None:
        return next((no for n, i, no in self.tables if n == table and i == index), None)


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return " (one of " + ", ".join(choices) + ")"


class _Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = _Lines(text)

    def err(self, table: str, index: int, key: str | None, problem: str) -> PriceSheetError:
        where = "[sheet]" if table == "sheet" else f"[[price]] #{index + 1}"
        field = f"{where}.{key}" if key else where
        return PriceSheetError(self.path, self.lines.key(table, index, key), field, problem)

    def text(self, t: Mapping[str, Any], key: str, table: str, i: int, need: bool) -> str | None:
        value = t.get(key)
        if value is None:
            if need:
                raise self.err(table, i, None, f"{key!r} is missing (required)")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.err(table, i, key, f"{value!r:.40} is not a non-empty text")
        return value.strip()

    def date(self, t: Mapping[str, Any], table: str, i: int, need: bool) -> str | None:
        value = t.get("date")
        if value is None:
            if need:
                raise self.err(table, i, None, "'date' is missing: when were these prices read?")
            return None
        if isinstance(value, dt.datetime):
            return value.date().isoformat()
        if isinstance(value, dt.date):
            return value.isoformat()
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value.strip()).isoformat()
            except ValueError:
                pass
        raise self.err(table, i, "date", f"{value!r:.40} is not a date (write 2026-12-01)")

    def currency(self, t: Mapping[str, Any], table: str, i: int) -> str | None:
        value = t.get("currency")
        if value is None:
            return None
        if not isinstance(value, str) or not _CURRENCY.match(value):
            raise self.err(table, i, "currency", f"{value!r:.40} is not a currency code (USD, EUR)")
        return value

    def rate(self, t: Mapping[str, Any], key: str, i: int, need: bool) -> float | None:
        value = t.get(key)
        if value is None:
            if need:
                raise self.err("price", i, None, f"{key!r} is missing (per million tokens)")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.err("price", i, key, f"{value!r:.40} is not a price per million tokens")
        if not math.isfinite(value):
            raise self.err("price", i, key, f"{value} is not a finite price")
        if value < 0:
            raise self.err("price", i, key, f"{value:g} is negative")
        if value > MAX_PRICE_PER_MILLION:
            raise self.err(
                "price",
                i,
                key,
                f"{value:g} per million tokens is not plausible (at most "
                f"{MAX_PRICE_PER_MILLION:g}; prices are per million tokens, not per token)",
            )
        return float(value)

    def unknown(self, t: Mapping[str, Any], allowed: Sequence[str], table: str, i: int) -> None:
        for key in t:
            if key not in allowed:
                raise self.err(table, i, key, "unknown key" + _did_you_mean(key, allowed))


def load_price_sheet(path: str | Path) -> PriceSheet:
    """Read and check a price sheet; `PriceSheetError` names file, line and field."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_SHEET_BYTES + 1)
    except OSError as exc:
        raise PriceSheetError(path, None, None, f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_SHEET_BYTES:
        raise PriceSheetError(path, None, None, f"over {MAX_SHEET_BYTES:,} bytes: not a sheet")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PriceSheetError(path, None, None, f"not UTF-8 (byte {exc.start})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _TOML_LINE.search(str(exc))
        line = int(m.group(1)) if m else None
        problem = _TOML_LINE.sub("", str(exc)).strip()
        raise PriceSheetError(path, line, None, f"not TOML ({problem})") from None
    return _parse(path, text, doc)


def _parse(path: Path, text: str, doc: dict[str, Any]) -> PriceSheet:
    r = _Reader(path, text)
    for key in doc:
        if key not in ("sheet", "price"):
            raise PriceSheetError(
                path,
                r.lines.key("", 0, key) or r.lines.header(key),
                key,
                "unknown table or key" + _did_you_mean(key, ("sheet", "price")),
            )
    sheet = doc.get("sheet")
    if not isinstance(sheet, dict):
        raise PriceSheetError(path, None, "[sheet]", "missing: the sheet's currency, date, source")
    r.unknown(sheet, SHEET_KEYS, "sheet", 0)
    currency = r.currency(sheet, "sheet", 0)
    if currency is None:
        raise r.err("sheet", 0, None, "'currency' is missing (USD, EUR, ...)")
    date = r.date(sheet, "sheet", 0, need=True) or ""
    source = r.text(sheet, "source", "sheet", 0, need=True) or ""
    example = sheet.get("example", False)
    if not isinstance(example, bool):
        raise r.err("sheet", 0, "example", f"{example!r:.40} is not true or false")
    raw_prices = doc.get("price")
    if not isinstance(raw_prices, list) or not raw_prices:
        raise PriceSheetError(path, None, "[[price]]", "no prices: add a [[price]] table per model")
    prices = tuple(_price(r, t, i, currency, date, source) for i, t in enumerate(raw_prices))
    _check_overlaps(r, prices)
    return PriceSheet(path, currency, date, source, prices, example)


def _price(r: _Reader, t: Any, i: int, currency: str, date: str, source: str) -> ModelPrice:
    if not isinstance(t, dict):
        raise r.err("price", i, None, "must be a table")
    r.unknown(t, PRICE_KEYS, "price", i)
    model = r.text(t, "model", "price", i, need=True) or ""
    vendor = r.text(t, "vendor", "price", i, need=False)
    aliases = t.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise r.err("price", i, "aliases", "must be a list of model names")
    own = r.currency(t, "price", i)
    if own is not None and own != currency:
        raise r.err(
            "price",
            i,
            "currency",
            f"{own} differs from the sheet's {currency}: one sheet, one currency "
            "(convert the price, or write a sheet per currency)",
        )
    input_rate = r.rate(t, "input", i, need=True)
    output_rate = r.rate(t, "output", i, need=True)
    assert input_rate is not None and output_rate is not None
    return ModelPrice(
        model=model,
        vendor=vendor,
        aliases=tuple(a.strip() for a in aliases),
        input=input_rate,
        output=output_rate,
        cached_input=r.rate(t, "cached_input", i, need=False),
        cache_write=r.rate(t, "cache_write", i, need=False),
        reasoning=r.rate(t, "reasoning", i, need=False),
        currency=currency,
        date=r.date(t, "price", i, need=False) or date,
        source=r.text(t, "source", "price", i, need=False) or source,
        line=r.lines.header("price", i),
    )


def _check_overlaps(r: _Reader, prices: Sequence[ModelPrice]) -> None:
    """No two entries may price the same recording (`PriceSheet.find` would pick one)."""
    for j, later in enumerate(prices):
        for i, earlier in enumerate(prices[:j]):
            if earlier.vendor and later.vendor:
                same_vendor = earlier.vendor.lower() == later.vendor.lower()
                a = {n.lower() for n in (earlier.model, *earlier.aliases)}
                b = {n.lower() for n in (later.model, *later.aliases)}
                common = (a & b) if same_vendor else set()
            else:
                common = set(earlier.names()) & set(later.names())
            if common:
                raise r.err(
                    "price",
                    j,
                    "model",
                    f"{sorted(common)[0]!r} is also priced by [[price]] #{i + 1} "
                    f"({earlier.name}, line {earlier.line}): a recording would match both",
                )


# --- choosing a price ------------------------------------------------------------------


def source_label(vendor: str | None, model: str | None) -> str | None:
    """`vendor/model`, `model`, or None: how outputs name a recording's source."""
    parts = [str(p) for p in (vendor, model) if p]
    return "/".join(parts) or None


@dataclass(frozen=True)
class PriceChoice:
    """The sheet and the command line's overrides: which entry prices which source.

    `overrides` maps a source label (as outputs print it) to an entry name; the key `*`
    prices every recording as one entry."""

    sheet: PriceSheet
    overrides: Mapping[str, ModelPrice] = field(default_factory=dict)

    @classmethod
    def from_options(cls, sheet: PriceSheet, price_as: Sequence[str] = ()) -> PriceChoice:
        """`--price-as ENTRY` (everything) and `--price-as SOURCE=ENTRY`, checked."""
        chosen: dict[str, ModelPrice] = {}
        for option in price_as:
            source, _, name = option.rpartition("=")
            entry = sheet.entry(name.strip())
            if entry is None:
                names = ", ".join(p.name for p in sheet.prices)
                raise PriceSheetError(
                    sheet.path,
                    None,
                    "--price-as",
                    f"no entry {name.strip()!r} in the sheet"
                    + _did_you_mean(name.strip(), [p.name for p in sheet.prices])
                    + f" (entries: {names})",
                )
            chosen[source.strip().lower() or "*"] = entry
        return cls(sheet, chosen)

    def price_for(self, vendor: str | None, model: str | None) -> tuple[ModelPrice | None, str]:
        """(the entry, how it was chosen) or (None, why the recording is unpriced)."""
        label = source_label(vendor, model)
        if label is not None and label.lower() in self.overrides:
            return self.overrides[label.lower()], "--price-as"
        if "*" in self.overrides:
            return self.overrides["*"], "--price-as"
        if label is None:
            return None, "the recording names no model (use --price-as ENTRY)"
        found = self.sheet.find(vendor, model)
        if found is None:
            return None, (
                f"no price for {label!r} in {self.sheet.path.name} "
                f"(add a [[price]] for it, or use --price-as {label}=ENTRY)"
            )
        return found, "matched by source"
