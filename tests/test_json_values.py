from relay_app.core.json_values import json_int, json_object, json_objects


def test_a_number_is_an_int_and_true_is_not_one() -> None:
    assert json_int(42) == 42
    assert json_int(-7) == -7
    assert json_int(True) is None
    assert json_int(False) is None
    assert json_int(4.0) is None
    assert json_int("42") is None
    assert json_int(None) is None


def test_objects_are_kept_and_anything_else_reads_as_empty() -> None:
    assert json_object({"a": 1}) == {"a": 1}
    assert json_object([{"a": 1}]) == {}
    assert json_object("{}") == {}
    assert json_objects([{"a": 1}, 2, "x", None, {"b": 2}]) == [{"a": 1}, {"b": 2}]
    assert json_objects({"a": 1}) == []
    assert json_objects(None) == []
