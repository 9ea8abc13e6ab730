"""What `uxlab inspect` prints: the table with its pooled summary (and costs), or one JSON
object per recording per line (then the cost summaries)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

from uxlab.streams.inspect_table import rows, write_table
from uxlab.streams.metrics import nest

if TYPE_CHECKING:
    from pricing.corpus import PricedCorpus
    from uxlab.streams.inspect_load import Inspection


def write_inspection(
    found: Inspection, costs: PricedCorpus | None, as_json: bool, out: TextIO, width: int
) -> None:
    """Write `found` (priced by `costs`, or not) to `out`, a table `width` columns wide or,
    `as_json`, JSON Lines."""
    table_rows = rows(found.table)
    if as_json:
        from uxlab.streams.inspect_costs import cost_record

        for i, (path, row) in enumerate(zip(found.paths, table_rows, strict=True)):
            record = nest(row, ndigits=3)
            record["path"] = str(path)
            if costs is not None:
                record.update(cost_record(costs, i))
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        for summary in costs.summary_records() if costs is not None else []:
            out.write(json.dumps(summary, ensure_ascii=False) + "\n")
    elif costs is None:
        write_table(table_rows, found.summary(), out, width)
    else:
        from uxlab.streams.inspect_costs import cost_column, legend
        from uxlab.streams.inspect_costs import summary_lines as cost_summary

        ids = [str(r["id"]) for r in table_rows]
        write_table(
            table_rows,
            found.summary(),
            out,
            width,
            costs=cost_column(costs),
            after_summary=cost_summary(costs, ids, max(width, 60)),
            legend_extra=legend(costs),
        )
