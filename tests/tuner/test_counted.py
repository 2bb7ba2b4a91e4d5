"""trial57 #17: a known count reads "1 node" / "4 nodes", never "node(s)"."""

import pytest

from autotune.candidate import knobs_sentence
from autotune.counted import counted


@pytest.mark.parametrize("count, said", [(1, "1 node"), (4, "4 nodes"), ("1-2", "1-2 nodes"), ("3, 5-7", "3, 5-7 nodes"),
                                         ("1", "1 node"), (0, "0 nodes")])
def test_a_count_takes_its_noun_singular_for_one_alone(count, said):
    assert counted(count, "node") == said


def test_a_configuration_names_its_nodes_without_a_hedge():
    params = {"zero_stage": 3, "optimizer_offload": "none", "activation_checkpointing": "recompute", "sp_degree": 1,
              "micro_batch": 2, "nodes": 1}
    assert knobs_sentence(params).endswith("micro-batch 2, 1 node")
    assert knobs_sentence({**params, "nodes": 4}).endswith("micro-batch 2, 4 nodes")
