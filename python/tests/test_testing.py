"""tegula.testing.assert_close: what it lets through and what it refuses."""
import numpy as np
import pytest

from tegula.testing import assert_close


def test_close_values_pass_and_far_ones_name_the_worst():
    assert_close(np.array([1.0, 2.0], np.float32), np.array([1.0, 2.0 + 1e-7], np.float32))
    with pytest.raises(AssertionError, match=r"1 of 2 elements differ .* worst at \(1,\)"):
        assert_close(np.array([1.0, 2.5], np.float32), np.array([1.0, 2.0], np.float32))


def test_nan_passes_only_against_nan():
    assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    with pytest.raises(AssertionError, match="NaN mismatch"):
        assert_close(np.array([np.nan]), np.array([1.0]))
    with pytest.raises(AssertionError, match="NaN mismatch"):
        assert_close(np.array([1.0]), np.array([np.nan]))


def test_infinities_must_be_the_same_infinity():
    assert_close(np.array([np.inf, -np.inf, 3.0]), np.array([np.inf, -np.inf, 3.0]))
    # A relative tolerance of an infinite expected value bounds nothing: each
    # of these passed before.
    for actual, expected in [([1.0, 2.0], [np.inf, -np.inf]), ([np.inf], [-np.inf]), ([np.inf], [1e30])]:
        with pytest.raises(AssertionError, match="differ in their infinities"):
            assert_close(np.array(actual), np.array(expected))


def test_complex_arrays_are_refused():
    with pytest.raises(TypeError, match="compares real arrays"):
        assert_close(np.array([1 + 2j]), np.array([1 + 0j]))


def test_integers_are_compared_exactly_at_any_width():
    # float64 would take each of these pairs for equal.
    with pytest.raises(AssertionError, match=r"1 of 2 elements differ .* first at \(1,\): actual 4611686018427387905"):
        assert_close(np.array([1, 2**62 + 1], np.int64), np.array([1, 2**62], np.int64))
    top = np.iinfo(np.uint64).max
    with pytest.raises(AssertionError, match="18446744073709551615"):
        assert_close(np.array([top], np.uint64), np.array([top - 1], np.uint64))
    assert_close(np.array([top], np.uint64), np.array([top], np.uint64))
    # Signed against unsigned, and bools, compare as the integers they are.
    with pytest.raises(AssertionError, match="differ"):
        assert_close(np.array([-1], np.int64), np.array([top], np.uint64))
    assert_close(np.array([True, False]), np.array([1, 0], np.int8))
    assert_close(np.array([10, 20], np.int32), np.array([11, 20], np.int32), atol=1)


def test_nan_or_negative_tolerances_are_refused():
    for bad in (dict(atol=float("nan")), dict(rtol=float("nan")), dict(atol=-1.0), dict(rtol=float("inf"))):
        with pytest.raises(ValueError, match="must be a finite number >= 0"):
            assert_close(np.array([1.0]), np.array([2.0]), **bad)
