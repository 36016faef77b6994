"""UnionFind against a plain graph search, on generated edge lists."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from templater.unionfind import UnionFind

EDGES = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=60)


def reference_components(edges: list[tuple[int, int]]) -> list[set[int]]:
    neighbours: dict[int, set[int]] = {}
    for a, b in edges:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    seen, out = set(), []
    for start in neighbours:
        if start in seen:
            continue
        stack, component = [start], set()
        while stack:
            node = stack.pop()
            if node not in component:
                component.add(node)
                stack.extend(neighbours[node] - component)
        seen |= component
        out.append(component)
    return out


@given(EDGES)
def test_components_equal_graph_search(edges):
    sets = UnionFind()
    joined = [sets.union(a, b) for a, b in edges]
    found = sets.components()
    assert sorted(map(sorted, found.values())) == sorted(map(sorted, reference_components(edges)))
    assert all(root == min(members) for root, members in found.items())  # the smallest node labels its set
    assert sum(joined) == sum(len(c) - 1 for c in found.values())  # one True per edge that joined two sets


@given(EDGES)
def test_first_met_order_and_labels(edges):
    sets = UnionFind()
    met = []
    for a, b in edges:
        sets.union(a, b)
        for n in (a, b):
            if n not in met:
                met.append(n)
    assert list(sets.parent) == met
    groups = list(sets.components().values())
    assert all(members == sorted(members, key=met.index) for members in groups)  # members in first-met order
    assert [met.index(g[0]) for g in groups] == sorted(met.index(g[0]) for g in groups)  # sets too
    labels = sets.labels()
    assert all(labels[n] == min(c) for c in reference_components(edges) for n in c)


def test_find_of_an_unmet_node_does_not_add_it():
    sets = UnionFind()
    assert sets.find(5) == 5 and not sets.parent
    sets.add(7)
    assert sets.components() == {7: [7]}
