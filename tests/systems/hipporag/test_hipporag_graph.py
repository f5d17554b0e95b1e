"""hipporag's personalized PageRank (docs/agentic.md "hipporag"), plain Python so that the
core install runs it: against a hand-computed graph, and against networkx's own (which needs
scipy, from the ``clbench`` extra) on random weighted graphs."""

from __future__ import annotations

import importlib.util
import random

import networkx as nx
import pytest

from clstream.systems.hipporag.graph import personalized_pagerank

HAS_SCIPY = importlib.util.find_spec("scipy") is not None


def test_a_star_with_an_isolated_node_matches_the_hand_computed_fixed_point() -> None:
    # hub - a (weight 3), hub - b (weight 1), c isolated (dangling); restart at a, alpha 1/2.
    # From hub, a gets 3/4 of what it passes and b 1/4; c has no inflow, so c = 0:
    #   hub = (a + b) / 2,  b = hub / 8,  a = 3 hub / 8 + 1/2
    #   -> hub = 8a / 15,  a = a / 5 + 1/2  ->  a = 5/8, hub = 1/3, b = 1/24.
    graph = nx.Graph()
    graph.add_edge("hub", "a", weight=3.0)
    graph.add_edge("hub", "b", weight=1.0)
    graph.add_node("c")
    scores = personalized_pagerank(graph, {"a": 1.0}, alpha=0.5, nstart={"a": 1.0})
    assert scores["a"] == pytest.approx(5 / 8, abs=1e-6)
    assert scores["hub"] == pytest.approx(1 / 3, abs=1e-6)
    assert scores["b"] == pytest.approx(1 / 24, abs=1e-6)
    assert scores["c"] == 0.0
    assert sum(scores.values()) == pytest.approx(1.0, abs=1e-12)


def test_a_dangling_seed_sends_its_mass_back_by_the_personalization() -> None:
    graph = nx.Graph()
    graph.add_edge("x", "y", weight=2.0)
    graph.add_node("lone")
    # Restarts split between lone and x; lone's own mass goes back the same way, so
    # lone = 0.85 lone / 2 + 0.15 / 2. Were it dropped, the scores would not sum to 1.
    scores = personalized_pagerank(graph, {"lone": 1.0, "x": 1.0}, alpha=0.85)
    assert sum(scores.values()) == pytest.approx(1.0, abs=1e-12)
    assert scores["lone"] == pytest.approx(0.15 / 2 / (1 - 0.85 / 2), abs=1e-6)


def test_an_empty_graph_ranks_nothing_and_a_zero_personalization_is_refused() -> None:
    assert personalized_pagerank(nx.Graph(), {"a": 1.0}, alpha=0.5) == {}
    graph = nx.Graph()
    graph.add_edge("a", "b")
    with pytest.raises(ValueError, match="personalization"):
        personalized_pagerank(graph, {"zzz": 1.0}, alpha=0.5)


def random_graph(seed: int) -> tuple[nx.Graph, dict[str, float], dict[str, float]]:
    rng = random.Random(seed)
    graph = nx.Graph()
    size = rng.randint(5, 60)
    graph.add_nodes_from(f"n{i}" for i in range(size))
    for _ in range(rng.randint(size // 2, 3 * size)):
        a, b = rng.randrange(size), rng.randrange(size)
        if a != b:
            graph.add_edge(f"n{a}", f"n{b}", weight=rng.uniform(0.1, 5.0))
    seeds = rng.sample(sorted(graph), rng.randint(1, 4))
    personalization = {node: rng.uniform(0.1, 1.0) for node in seeds}
    nstart = personalization if seed % 2 else {node: rng.random() for node in graph}
    return graph, personalization, nstart


@pytest.mark.skipif(not HAS_SCIPY, reason="networkx's pagerank needs scipy: install the "
                    "'clbench' extra (pip install -e '.[clbench]')")
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("alpha", [0.5, 0.85])
def test_random_weighted_graphs_match_networkx_to_1e6(seed: int, alpha: float) -> None:
    graph, personalization, nstart = random_graph(seed)
    ours = personalized_pagerank(graph, personalization, alpha=alpha, nstart=nstart)
    theirs = nx.pagerank(graph, alpha=alpha, personalization=personalization, nstart=nstart,
                         weight="weight")
    assert ours.keys() == theirs.keys()
    for node, score in theirs.items():
        assert ours[node] == pytest.approx(score, abs=1e-6), node
