"""The best-first driver of the LP searches (isoapprox.ideal._frontier)."""

from __future__ import annotations

import numpy as np

from isoapprox.ideal._frontier import Frontier


def test_pops_in_key_order_ties_by_insertion():
    fr = Frontier("root", 100)
    assert fr.pop(1.0) == (-np.inf, "root")
    for key, node in ((0.3, "a"), (0.1, "b"), (0.3, "c"), (0.1, "d")):
        fr.push(key, node)
    assert [fr.pop(1.0)[1] for _ in range(4)] == ["b", "d", "a", "c"]
    assert fr.pop(1.0) is None


def test_the_bound_is_the_least_of_level_open_keys_and_closed_nodes():
    fr = Frontier("root", 100)
    fr.pop(1.0)
    assert fr.bound(1.0) == 1.0  # nothing open: the level is proven
    fr.push(0.7, "a")
    fr.push(0.5, "b")
    assert fr.bound(1.0) == 0.5 and fr.bound(0.4) == 0.4
    fr.close(0.45)
    assert fr.bound(1.0) == 0.45
    # every open key at or above the level: the nodes are pruned, the level holds
    assert fr.pop(0.5) is None and fr.bound(0.5) == 0.45
    fr2 = Frontier("root", 100)
    fr2.pop(1.0)
    fr2.push(0.7, "a")
    assert fr2.pop(0.6) is None and fr2.bound(0.6) == 0.6


def test_the_budget_and_the_stop_end_the_search():
    fr = Frontier("root", 3)
    fr.pop(1.0)
    fr.push(0.0, "a")
    fr.n_lp = 3
    assert fr.pop(1.0) is None and fr.bound(1.0) == 0.0
    asked = []

    def stop():
        asked.append(fr.n_lp)
        return len(asked) >= 2

    fr = Frontier("root", 160, stop)  # asked at n_lp >= 10, 20, ...
    for n in range(0, 40):
        fr.n_lp = n
        item = fr.pop(1.0)
        if item is None:
            break
        fr.push(0.0, n)
    assert asked == [10, 20] and fr.n_lp == 20


def test_polish_schedule():
    fr = Frontier("root", 1000, polish_every=10, max_polish=2, polish_gap=0.1)
    fr.n_lp = 9
    assert not fr.polish_due(0.0, 1.0)  # too early
    fr.n_lp = 10
    assert not fr.polish_due(0.95, 1.0)  # the node is within the gap of the level
    assert fr.polish_due(0.5, 1.0)
    fr.n_lp = 15
    assert not fr.polish_due(0.5, 1.0)  # ten LPs apart
    fr.n_lp = 20
    assert fr.polish_due(0.5, 1.0)
    fr.n_lp = 100
    assert not fr.polish_due(0.5, 1.0)  # at most two
