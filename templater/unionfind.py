"""Connected components by union-find: the one implementation the index, the signature methods and Spark share."""

from __future__ import annotations

from collections.abc import Hashable


class UnionFind:
    """Disjoint sets of the nodes met so far (by ``add`` or ``union``), in first-met order.

    A set's root is its smallest node, so labels are stable whatever order the unions come in (nodes must be
    comparable). ``find`` of a node never met is the node itself, and does not add it.
    """

    __slots__ = ("parent",)

    def __init__(self) -> None:
        self.parent: dict[Hashable, Hashable] = {}

    def add(self, node: Hashable) -> None:
        self.parent.setdefault(node, node)

    def find(self, node: Hashable) -> Hashable:
        root = node
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while self.parent.get(node, node) != root:  # path compression
            self.parent[node], node = root, self.parent[node]
        return root

    def union(self, a: Hashable, b: Hashable) -> bool:
        """Join the sets of a and b; False when they were one set already."""
        self.add(a)
        self.add(b)
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if rb < ra:
            ra, rb = rb, ra
        self.parent[rb] = ra
        return True

    def components(self) -> dict[Hashable, list]:
        """{root: members}: every set of the nodes met, members and sets in first-met order."""
        out: dict[Hashable, list] = {}
        for node in self.parent:
            out.setdefault(self.find(node), []).append(node)
        return out

    def labels(self) -> dict[Hashable, Hashable]:
        """{node: its set's smallest node} for every node met, in first-met order."""
        return {node: self.find(node) for node in self.parent}
