"""Williams squares: Latin squares balanced for first-order carry-over.

In a Williams design every condition appears once in every position, and every condition
follows every other condition equally often, so a participant's order cannot favour one
condition through what came just before it. For an even number of conditions `n` one
square of `n` rows does this; for an odd `n` the square and its mirror (2n rows) together
do (Williams 1949, Aust. J. Sci. Res. A 2:149-168).
"""

from __future__ import annotations


def williams_rows(n: int) -> list[list[int]]:
    """The rows of a Williams design for `n` conditions (n rows if n is even, else 2n).

    Row r is the first row 0, 1, n-1, 2, n-2, ... shifted by r (mod n).
    """
    if n < 1:
        raise ValueError(f"a Latin square needs at least one condition, not {n}")
    first: list[int] = [0]
    lo, hi = 1, n - 1
    take_low = True
    while len(first) < n:
        if take_low:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
        take_low = not take_low
    rows = [[(c + r) % n for c in first] for r in range(n)]
    if n % 2 == 1 and n > 1:
        rows += [list(reversed(row)) for row in rows]
    return rows


def williams_row(n: int, participant_number: int) -> list[int]:
    """The condition order for a participant: row (participant_number - 1) mod rows."""
    rows = williams_rows(n)
    return rows[(participant_number - 1) % len(rows)]
