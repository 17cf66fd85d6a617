"""The keyed engine's key index (cep_core.engine.keyed_batch.KeyIndex)."""

from __future__ import annotations

import numpy as np

from cep_core.engine.keyed_batch import KeyIndex


def test_integer_keys_far_from_zero_take_an_array_the_size_of_their_spread():
    index = KeyIndex()
    first = index.ids([np.array([1_590_007, 1_590_003, 1_590_007])])
    assert first.tolist() == [1, 0, 1]  # numbered in order of value within a feed
    assert len(index.direct) == 5 and index.base == 1_590_003
    below = index.ids([np.array([1_590_001, 1_590_003, 1_600_000])])  # widened both ways
    assert below.tolist() == [2, 0, 3]
    assert len(index.direct) <= 2 * (1_600_000 - 1_590_001 + 1)
    assert index.find([np.array([1_590_007, 5, 1_590_002, 1_600_000])]).tolist() == \
        [1, -1, -1, 3]
    assert index.values(np.array([0, 1, 2, 3]))[0].tolist() == \
        [1_590_003, 1_590_007, 1_590_001, 1_600_000]


def test_keys_beyond_the_array_move_to_the_dict_with_their_ids():
    index = KeyIndex()
    index.ids([np.array([10, 12])])
    spread = np.array([12, 10 + KeyIndex.DIRECT_LIMIT, 10])
    assert index.ids([spread]).tolist() == [1, 2, 0]  # known ids kept, the new one next
    assert not len(index.direct) and index.keys[(10,)] == 0
    assert index.values(np.array([2, 0]))[0].tolist() == [10 + KeyIndex.DIRECT_LIMIT, 10]
    assert index.ids([np.array(["a"], dtype=object)]).tolist() == [3]
