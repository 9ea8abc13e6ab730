"""What recordings cost: a user's price sheet, the tokens each recording reports, tasks.

Both `uxlab` (`inspect --prices`) and `analysis` (`report --score --prices`) price
recordings, and `analysis` never imports `uxlab`, so the pricing is a package of its own
that imports neither (import-linter contracts in pyproject.toml), like `trial_table_spec`:

- `sheet`: the TOML price sheet, checked (`load_price_sheet`, `PriceSheetError` naming file,
  line and field) and the choice of a price for a recording (`PriceChoice`, `--price-as`);
- `usage`: a recording's `end.usage` in every API's own terms, read into the categories a
  sheet bills (`read_usage`), or the reason it cannot be (never zero for want of a count);
- `cost`: one recording's cost (`price_recording`);
- `pooled`: costs per source (mean, p50, p90, speed per unit of money, reasoning);
- `tasks`: agent chains and single requests as tasks, and cost per completed task;
- `corpus`: the one path from a corpus's recordings to all of the above (`price_corpus`);
- `money`: amounts as the outputs print them.
"""

from pricing.cost import Cost, PricedRecording, TextCounts, cost_of, price_recording
from pricing.sheet import ModelPrice, PriceChoice, PriceSheet, PriceSheetError, load_price_sheet
from pricing.usage import TokenUsage, UsageReading, read_usage

__all__ = [
    "Cost",
    "ModelPrice",
    "PriceChoice",
    "PriceSheet",
    "PriceSheetError",
    "PricedRecording",
    "TextCounts",
    "TokenUsage",
    "UsageReading",
    "cost_of",
    "load_price_sheet",
    "price_recording",
    "read_usage",
]
