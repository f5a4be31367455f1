"""The benchmark's figures (bench/figures.py, bench/run.py): a ratio measured in rounds is claimed on the
median of the rounds' ratios, with their spread beside it (issue 33). No timing here: made-up numbers."""
import json

import pytest

from bench.figures import Figure, per_round
from bench.run import table


def test_a_ratio_in_rounds_is_their_median_with_min_and_max_beside_it():
    ratios = per_round([90.0, 100.0, 80.0, 99.0, 91.0], [100.0, 100.0, 100.0, 100.0, 100.0])
    figure = Figure("g", "env / raw", 91.0, "steps/s", 100.0, ratios=ratios)
    assert figure.ratio == pytest.approx(0.91)  # the median, not the mean (0.92) nor value / raw by chance
    assert figure.spread == pytest.approx((0.80, 1.00))
    data = json.loads(json.dumps(figure.as_dict()))
    assert (data["ratio_min"], data["ratio"], data["ratio_max"], data["rounds"]) == \
        pytest.approx((0.80, 0.91, 1.00, 5))
    row = table([figure]).splitlines()[-1]
    assert row.endswith("| 0.91 | 0.80-1.00 (5) |")


def test_a_figure_measured_once_keeps_value_over_raw_and_no_spread():
    figure = Figure("g", "once", 50.0, "ms", 200.0)
    assert figure.ratio == 0.25 and figure.spread is None
    assert figure.as_dict()["rounds"] == 0
    assert table([figure]).splitlines()[-1].endswith("| 0.25 |  |")


def test_rounds_are_paired_one_to_one():
    with pytest.raises(ValueError, match="3 rounds against 2"):
        per_round([1.0, 2.0, 3.0], [1.0, 2.0])
