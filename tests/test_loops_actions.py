"""LoopTune action semantics against hand-computed nests."""

from llmopt.loops.actions import ACTIONS, action_mask, apply, apply_all, is_available
from llmopt.loops.nest import Loop, Nest, batched_matmul, conv2d, extents_of, matmul, steps, validate


def test_untiled_start():
    nest = Nest.untiled(matmul(100, 48, 32))
    assert nest.compute == (Loop("m", 100), Loop("n", 48), Loop("k", 32))
    assert nest.writeback == (Loop("m", 100), Loop("n", 48))
    assert nest.cursor == 0


def test_split_sizes_and_tails():
    nest = apply(Nest.untiled(matmul(100, 48, 32)), "split_16")
    # 100 = 6 * 16 + 4: outer 6 steps of 16 with a 4-element tail, inner 16.
    assert nest.compute[:2] == (Loop("m", 6, 4), Loop("m", 16, 0))
    assert nest.cursor == 0 and steps(nest.compute)[:2] == [16, 1]
    nest = apply(nest, "split_4")
    # 6 // 4 = 1 step of 64, tail (6 % 4) * 16 + 4 = 36 elements.
    assert nest.compute[:3] == (Loop("m", 1, 36), Loop("m", 4, 0), Loop("m", 16, 0))
    assert steps(nest.compute)[:3] == [64, 16, 1]
    assert extents_of(nest.compute) == {"m": 100, "n": 48, "k": 32}
    validate(nest)
    # 1 // 8 == 0: invalid, a no-op.
    assert not is_available(nest, "split_8")
    assert apply(nest, "split_8") is nest


def test_split_in_writeback_nest():
    nest = Nest.untiled(matmul(64, 48, 32))
    nest = apply_all(nest, ["down", "down", "down", "down", "split_8"])  # cursor on write-back n
    assert nest.cursor == 4
    assert nest.writeback == (Loop("m", 64), Loop("n", 6), Loop("n", 8))
    assert len(nest.compute) == 3
    validate(nest)


def test_swaps_move_the_cursor_and_stay_in_their_nest():
    nest = Nest.untiled(matmul(64, 48, 32))
    assert not is_available(nest, "swap_up")  # first loop
    nest = apply(nest, "swap_down")
    assert [lp.iterator for lp in nest.compute] == ["n", "m", "k"] and nest.cursor == 1
    nest = apply_all(nest, ["down"])  # cursor on k, the last compute loop
    assert not is_available(nest, "swap_down")  # would cross into the write-back nest
    nest = apply(nest, "down")  # first write-back loop
    assert nest.cursor == 3 and not is_available(nest, "swap_up")
    # Two loops of one iterator never swap.
    split = apply(Nest.untiled(matmul(64, 48, 32)), "split_4")
    assert not is_available(split, "swap_down")


def test_cursor_moves_and_bounds():
    nest = Nest.untiled(matmul(64, 48, 32))
    assert action_mask(nest).tolist() == [False, True, False, True, True, True, True]
    end = apply_all(nest, ["down"] * 10)
    assert end.cursor == 4 and not is_available(end, "down")
    assert apply(end, "up").cursor == 3
    assert end.loops == nest.loops


def test_at_most_ten_loops():
    nest = Nest.untiled(matmul(256, 256, 256))
    nest = apply_all(nest, ["split_4"] * 3 + ["down", "down", "down", "down"] + ["split_4"] * 2)
    assert len(nest.loops) == 10
    assert not any(is_available(nest, a) for a in ("split_4", "split_8", "split_16"))


def test_action_indices_match_names():
    assert ACTIONS == ("up", "down", "swap_up", "swap_down", "split_4", "split_8", "split_16")
    nest = Nest.untiled(matmul(64, 64, 64))
    assert apply(nest, 6) == apply(nest, "split_16")


def test_other_contractions_are_expressible():
    bmm = Nest.untiled(batched_matmul(2, 8, 8, 8))
    assert [lp.iterator for lp in bmm.writeback] == ["b", "m", "n"]
    conv = conv2d(4, 3, 6, 6, 3, 3)
    x = conv.inputs[0]
    assert conv.iterator_stride(x, "ry") == 8 and conv.iterator_stride(x, "rx") == 1  # X is (3, 8, 8)
    validate(Nest.untiled(conv))
