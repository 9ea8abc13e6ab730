"""Make the two other-lab trial tables the report must read (run from the repo root).

`psychopy_latency.csv`: what PsychoPy Builder writes for a study with an instructions
routine, a `trials` loop over `delay_s` (the wait before the reply, in seconds), a keyboard
response `key_resp` ('j' = acceptable, 'f' = not) and a 1-5 `slider`, concatenated over 8
participants: loop counters (`trials.thisN`, ...), `key_resp.rt` in seconds, routine start
times, one instructions row and one thanks row per file without a stimulus.

`jspsych_latency.csv`: what jsPsych 7's `jsPsych.data.get().csv()` writes for an
instructions page, then html-keyboard-response trials carrying `delay` (ms) in their data
and `subject` added with `data.addProperties`: `rt` in ms, `response` the key ('y' / 'n'),
`stimulus` HTML, `view_history` a JSON cell on the instructions row.

Observers: the acceptable share falls with ln delay, per-person 50% points log-normal
around 1,400 ms (SD 0.3 ln ms), logistic width 1.2 ln ms (10% -> 90%); seed fixed.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
DELAYS_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
POP_MS, SD_LN, WIDTH_LN = 1400.0, 0.3, 1.2


def p_acceptable(delay_ms: float, m_ms: float) -> float:
    z = np.log(9.0) * (np.log(delay_ms) - np.log(m_ms)) / (WIDTH_LN / 2.0)
    return 1.0 / (1.0 + np.exp(z))


def psychopy(rng: np.random.Generator) -> None:
    header = [
        "delay_s", "trials.thisRepN", "trials.thisTrialN", "trials.thisN", "trials.thisIndex",
        "thisRow.t", "notes", "instr.started", "instr.stopped", "key_resp_instr.keys",
        "key_resp_instr.rt", "trial.started", "trial.stopped", "key_resp.keys", "key_resp.rt",
        "key_resp.duration", "slider.response", "slider.rt", "participant", "session", "date",
        "expName", "psychopyVersion", "frameRate", "expStart",
    ]  # fmt: skip
    rows = []
    for p in range(8):
        pid = f"{p + 1:02d}"
        m_ms = POP_MS * float(np.exp(rng.normal(0.0, SD_LN)))
        common = [pid, "001", f"2026-11-2{p % 7 + 1}_10h0{p}.12.345", "latency_ttft",
                  "2024.2.4", "60.0", f"2026-11-2{p % 7 + 1} 10h0{p}.12.345678 +0000"]  # fmt: skip
        t = 3.1
        rows.append(["", "", "", "", "", "0.02", "", "0.02", "3.05", "space", "2.9871",
                     "", "", "", "", "", "", "", *common])  # fmt: skip
        n = 0
        for rep in range(5):
            order = rng.permutation(len(DELAYS_S))
            for trial_n, index in enumerate(order):
                delay_s = DELAYS_S[index]
                ok = rng.random() < p_acceptable(delay_s * 1000.0, m_ms)
                rating = int(np.clip(round(1 + 4 * p_acceptable(delay_s * 1000.0, m_ms)
                                           + rng.normal(0, 0.6)), 1, 5))  # fmt: skip
                rt = float(rng.uniform(0.4, 1.6))
                rows.append([
                    f"{delay_s:g}", rep, trial_n, n, int(index), f"{t:.4f}", "",
                    "", "", "", "", f"{t:.4f}", f"{t + delay_s + rt + 2:.4f}",
                    "j" if ok else "f", f"{rt:.4f}", "", rating, f"{rng.uniform(0.8, 2):.4f}",
                    *common,
                ])  # fmt: skip
                t += delay_s + rt + 4.0
                n += 1
        rows.append(["", "", "", "", "", f"{t:.4f}", "", "", "", "", "", "", "", "", "",
                     "", "", "", *common])  # fmt: skip
    with open(HERE / "psychopy_latency.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(header)
        out.writerows(rows)


def jspsych(rng: np.random.Generator) -> None:
    header = ["rt", "stimulus", "response", "trial_type", "trial_index", "time_elapsed",
              "internal_node_id", "subject", "view_history", "delay", "task"]  # fmt: skip
    rows = []
    for p in range(8):
        subject = f"s{p + 101}"
        m_ms = POP_MS * float(np.exp(rng.normal(0.0, SD_LN)))
        elapsed, index = 0, 0
        views = [{"page_index": 0, "viewing_time": int(rng.integers(2000, 9000))}]
        elapsed += views[0]["viewing_time"]
        rows.append([views[0]["viewing_time"], "", "", "instructions", index, elapsed, "0.0-0.0",
                     subject, json.dumps(views, separators=(",", ":")), "", ""])  # fmt: skip
        for rep in range(5):
            for d in rng.permutation(len(DELAYS_S)):
                index += 1
                delay_ms = DELAYS_S[d] * 1000.0
                ok = rng.random() < p_acceptable(delay_ms, m_ms)
                rt = int(rng.integers(350, 1800))
                elapsed += int(delay_ms) + rt + 500
                rows.append([rt, "<p>Was that reply fast enough? (y / n)</p>",
                             "y" if ok else "n", "html-keyboard-response", index, elapsed,
                             f"0.0-{rep + 1}.0-{index}.0", subject, "", f"{delay_ms:g}",
                             "judge"])  # fmt: skip
    with open(HERE / "jspsych_latency.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(header)
        out.writerows(rows)


if __name__ == "__main__":
    rng = np.random.default_rng(20261203)
    psychopy(rng)
    jspsych(rng)
