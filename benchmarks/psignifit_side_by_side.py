"""Our psychometric fitter next to psignifit 4 on the same simulated datasets.

For each dataset both fit psi = guess + (1 - guess - lapse) F(ln x) (logistic, yes/no, all
of m, w, guess, lapse free; psignifit also estimates its overdispersion eta unless fixed
to 0). Printed per method: bias and RMSE of the 50% threshold, 95% interval coverage of the
true threshold, mean interval width and wall time per dataset (ours includes a B = 1000
parametric bootstrap; psignifit's intervals come from its posterior grid). CPU time is
printed next to wall time because other work on a shared machine inflates wall time.

psignifit is GPL-3 and is never a dependency of uxlab. Install it into a throwaway virtual
environment and run this script with that interpreter, from the project root:

    python -m venv /tmp/psignifit-venv
    /tmp/psignifit-venv/bin/pip install psignifit numpy scipy pandas
    PYTHONPATH=. /tmp/psignifit-venv/bin/python benchmarks/psignifit_side_by_side.py

Without psignifit the script runs our fitter only and says how to install it.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

from analysis.psychometric import PsychometricFitter
from benchmarks.support.psychometric_recovery import Cell, simulate_cell
from benchmarks.support.simulate_observers import true_threshold_ms

INSTALL_HINT = __doc__.split("environment and run this script")[1].split("Without")[0]

CELLS = [
    Cell(threshold_ms=800, width_log=1.0, guess=0.02, lapse=0.02, n_per_level=40),
    Cell(threshold_ms=500, width_log=0.7, n_per_level=20),
    Cell(threshold_ms=2000, width_log=1.5, lapse=0.05, n_per_level=20),
]


def ours(x, k, n, seed: int):
    fit = PsychometricFitter(sigmoid="logistic", direction="rising").fit(
        x, k, n, n_boot=1000, seed=seed
    )
    return (fit.threshold(0.5), *fit.threshold_ci(0.5))


def psignifit_fit(psignifit, x, k, n, fix_eta: bool):
    data = np.column_stack([np.log(x), k, n])
    options = {"sigmoid": "logistic", "experiment_type": "yes/no"}
    if fix_eta:
        options["fixed_parameters"] = {"eta": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = psignifit.psignifit(data, **options)
    low, high = result.confidence_intervals["threshold"]["0.95"]
    return (
        float(np.exp(result.parameter_estimate_MAP["threshold"])),
        float(np.exp(low)),
        float(np.exp(high)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=20, help="datasets per cell")
    parser.add_argument(
        "--psignifit-default-datasets",
        type=int,
        default=5,
        help="datasets per cell for psignifit's default fit (eta free, ~10 s each)",
    )
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    try:
        import psignifit
    except ImportError:
        psignifit = None
        print("psignifit is not installed here; running our fitter only. To compare:")
        print(INSTALL_HINT)

    methods = {"ours (MLE + B=1000 bootstrap)": lambda x, k, n, s: ours(x, k, n, s)}
    if psignifit is not None:
        methods["psignifit 4, eta = 0"] = lambda x, k, n, s: psignifit_fit(psignifit, x, k, n, True)
        methods["psignifit 4, default (eta free)"] = lambda x, k, n, s: psignifit_fit(
            psignifit, x, k, n, False
        )
    load_before = os.getloadavg()
    print(
        f"{'cell':<34} {'method':<32} {'n':>3} {'bias ms':>8} {'RMSE ms':>8} {'cover':>6} "
        f"{'CI width':>9} {'s/dataset':>10} {'cpu s/ds':>9}"
    )
    times: dict[str, list[float]] = {name: [] for name in methods}
    cpu_times: dict[str, list[float]] = {name: [] for name in methods}
    diffs: list[float] = []
    for ci, cell in enumerate(CELLS):
        truth = true_threshold_ms(0.5, cell.threshold_ms, cell.width_log, cell.sigmoid)
        datasets = [simulate_cell(cell, args.seed + 1000 * ci + i) for i in range(args.datasets)]
        label = (
            f"m={cell.threshold_ms:g} w={cell.width_log:g} g={cell.guess:g} "
            f"l={cell.lapse:g} n={cell.n_per_level}"
        )
        estimates: dict[str, np.ndarray] = {}
        for name, method in methods.items():
            count = args.datasets
            if "default" in name:
                count = min(count, args.psignifit_default_datasets)
            rows = []
            t0, c0 = time.perf_counter(), time.process_time()
            for i, (x, k, n) in enumerate(datasets[:count]):
                rows.append(method(x, k, n, i))
            per_dataset = (time.perf_counter() - t0) / count
            cpu_per_dataset = (time.process_time() - c0) / count
            times[name].append(per_dataset)
            cpu_times[name].append(cpu_per_dataset)
            est, low, high = np.array(rows).T
            estimates[name] = est
            err = est - truth
            cover = np.mean((low <= truth) & (truth <= high))
            print(
                f"{label:<34} {name:<32} {count:>3} {err.mean():>+8.1f} "
                f"{np.sqrt(np.mean(err**2)):>8.1f} {cover:>6.2f} {np.mean(high - low):>9.1f} "
                f"{per_dataset:>10.3f} {cpu_per_dataset:>9.3f}",
                flush=True,
            )
        if "psignifit 4, eta = 0" in estimates:
            mine = estimates["ours (MLE + B=1000 bootstrap)"]
            diffs.extend(np.abs(mine - estimates["psignifit 4, eta = 0"]) / mine)
    print()
    ours_name = "ours (MLE + B=1000 bootstrap)"
    ours_s, ours_cpu = float(np.mean(times[ours_name])), float(np.mean(cpu_times[ours_name]))
    print(f"ours: {ours_s:.3f} s wall, {ours_cpu:.3f} s CPU per dataset including B = 1000")
    for name in methods:
        if name.startswith("psignifit"):
            wall, cpu = float(np.mean(times[name])), float(np.mean(cpu_times[name]))
            print(
                f"{name}: {wall:.2f} s wall, {cpu:.2f} s CPU per dataset; ours is "
                f"{wall / ours_s:.0f}x faster by wall time, {cpu / ours_cpu:.0f}x by CPU time"
            )
    if diffs:
        print(
            f"threshold difference ours vs psignifit (eta = 0): median "
            f"{100 * np.median(diffs):.2f}%, max {100 * np.max(diffs):.2f}%"
        )
    load_after = os.getloadavg()
    print(
        f"load average (1 min) {load_before[0]:.1f} at the start, {load_after[0]:.1f} at the end "
        f"on {os.cpu_count()} cores: other work inflates wall time, less so CPU time"
    )


if __name__ == "__main__":
    main()
