"""What the benchmarks and their small versions in `tests/` share, and no `uxlab` command runs.

The methods checks: simulated observers and studies with a known truth judged by the real
analysis (`simulate_observers`, `simulate_chain_observers`, `psychometric_recovery`,
`validation_grid`, `pooled_validation` with the random-intercept model `psychometric_mixed`,
`adaptive_validation`, `cluster_coverage`, `realised`), and an X server for glass timing on a
headless machine (`xserver`). They import `uxlab` and `analysis`, never the other way round;
the wheel does not ship them (`pyproject.toml` lists the packages it ships).
"""
