import pickle

import pytest

import contextwright.errors as errors
from contextwright._optional import require


def _all_error_classes():
    return [obj for obj in vars(errors).values() if isinstance(obj, type) and issubclass(obj, errors.ContextwrightError)]


def test_every_error_is_rooted_and_documented():
    for cls in _all_error_classes():
        assert issubclass(cls, errors.ContextwrightError)
        assert cls.__doc__, cls


def test_errors_carry_structured_fields_and_survive_pickling():
    error = errors.SeqConflict("s1", expected_seq=3, actual_seq=5)
    assert (error.session_id, error.expected_seq, error.actual_seq) == ("s1", 3, 5)
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is errors.SeqConflict and clone.fields == error.fields and str(clone) == str(error)


def test_prefix_over_budget_names_class_size_and_cap():
    error = errors.PrefixOverBudget("instructions", size=5210, cap=4000)
    assert str(error).startswith("instructions is 5,210 tokens, cap 4,000")


def test_misuse_is_kept_apart_from_run_failures():
    assert issubclass(errors.InvalidSessionId, errors.UsageError)
    assert not issubclass(errors.SeqConflict, errors.UsageError)
    assert not issubclass(errors.StorageError, errors.UsageError)


def test_missing_extra_names_the_pip_command():
    with pytest.raises(ImportError) as info:
        require("contextwright_no_such_module", extra="postgres", feature="the PostgreSQL event log")
    assert 'pip install "contextwright[postgres]"' in str(info.value)
    assert isinstance(info.value, errors.MissingDependencyError)
