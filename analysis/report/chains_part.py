"""The report's agent-chain section: does latency multiply along a chain of model calls?

Present when the trial table has a per-call TTFT column (``call_ttft_ms``) and a chain
length column (``n_steps``) with two or more lengths, plus a binary judgement: it calls
`analysis.chains.chain_section` and lays its answer, tables and figure out as report blocks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.report.figure_png import png_bytes

if TYPE_CHECKING:
    from analysis.chains import ChainSection
    from analysis.report.blocks import Block
    from analysis.report.data import ReportData

CHAIN_STIMULUS = "call_ttft_ms"
CHAIN_STEPS = "n_steps"


def chain_part(data: ReportData) -> ChainSection | None:
    """`chain_section` on the analysed trials, or None when the study has no chains."""
    from analysis.chains import ChainDataError, chain_section

    kept = data.kept
    p = data.psychometric
    if p is None or not {CHAIN_STIMULUS, CHAIN_STEPS} <= set(kept.columns):
        return None
    if kept[CHAIN_STEPS].nunique() < 2:
        return None
    direction = "falling" if p.yes_means == "acceptable" else "rising"
    try:
        return chain_section(
            kept,
            stimulus=CHAIN_STIMULUS,
            steps=CHAIN_STEPS,
            response=p.column,
            direction=direction,
            n_boot=data.options.n_boot,
            seed=data.options.seed,
        )
    except (ChainDataError, ValueError) as exc:
        data.notes.append(f"No agent-chain analysis: {exc}.")
        return None


def chain_blocks(part: ChainSection | None) -> list[Block]:
    """Heading, answer, model comparison, thresholds per length, figure and cell table."""
    if part is None:
        return []
    from analysis.report.blocks import Figure, Heading, Para, Table

    fit = part["fit"]
    models = part["models"][["model", "k", "threshold_1_ms", "loglik", "aic", "delta_aic", "lr_p"]]
    table = part["table"].rename(
        columns={
            "threshold_ms": "50% threshold (ms)",
            "fitted_ms": "free k (ms)",
            "if_multiplies_ms": "k = 1 (ms)",
            "if_per_call_ms": "k = 0 (ms)",
        }
    )
    return [
        Heading(part["title"]),
        Para(part["answer"]),
        Para(
            "Model: P(too slow) = F(b0 + b1 ln x + b2 ln n) for n model calls at per-call TTFT "
            "x (F logistic), so the threshold on x at length n is T1·n^-k with k = b2/b1. "
            "k = 1: the waiting sums over the chain (latency multiplies); k = 0: each call is "
            f"judged on its own. The {round(100 * (1 - fit.alpha))}% CI of k resamples "
            f"participants (B = {len(fit.boot_k_)}). Trials given up without an answer are "
            "left out of this fit (giving up tracks the whole wait); their share per cell is "
            "in the last table."
        ),
        Table(models.round(3), "Models compared by likelihood and AIC (lr_p: against free k)"),
        Table(table.round(1), "Threshold on per-call TTFT per chain length, 95% CI"),
        Figure(
            "chains",
            png_bytes(part["figure"]),
            "Threshold on per-call TTFT by chain length (log-log) with the fitted exponent "
            "and what each hypothesis predicts.",
        ),
        Table(part["cells"].round(3), "Per chain length and per-call TTFT: end-to-end impatience"),
    ]
