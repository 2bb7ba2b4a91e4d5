"""The search space: which knob values a study may try, the rules a candidate must meet, and the
memory estimate that prunes what would not fit.
"""

from autotune.space.files import SearchSpace, listed_nodes, load_space, node_span, nodes_flag, parse_nodes, spans_text
from autotune.space.enumerate import CandidateCheck, check_candidate, enumerate_space
from autotune.space.rules import rule_violation
from autotune.space.baseline import baseline

__all__ = [
    "baseline",
    "CandidateCheck",
    "SearchSpace",
    "check_candidate",
    "enumerate_space",
    "listed_nodes",
    "load_space",
    "node_span",
    "nodes_flag",
    "parse_nodes",
    "rule_violation",
    "spans_text",
]
