"""A count and its noun in words: "1 node", "4 nodes", "1-2 nodes".

The reports wrote "4 node(s)" and "1 GPU(s)" where the number was known (trial57 #17): the hedge is for a
reader who does not know the count, and every line that said it knew. One helper, so each line reads alike.
"""

from __future__ import annotations


def counted(count, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, singular for exactly one: `counted(4, "node")` is "4 nodes", `counted("1-2", "node")`
    "1-2 nodes" (a range or list of counts, as --nodes is written, is plural). `plural` where adding "s" is wrong."""
    return f"{count} {noun if str(count).strip() == '1' else plural or noun + 's'}"


def agreeing(count, one: str, many: str) -> str:
    """The word that agrees with `count` as `counted` writes it: `agreeing(1, "was", "were")` is "was" (so
    "1 probe was replayed", "3 probes were replayed"); a range of counts, like counted's, takes `many`."""
    return one if str(count).strip() == "1" else many
