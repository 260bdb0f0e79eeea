"""Tool names for model APIs: always valid, never two alike, always reversible, stable."""
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raider_sync.llm import ToolNames, is_model_name
from raider_sync.llm.names import hashed_name

names = st.lists(st.text(max_size=120), max_size=30, unique=True)
# names that collide once made safe: same safe form, different characters
lookalikes = st.lists(st.sampled_from(["a.b", "a/b", "a b", "a_b", "a-b", "é", "_", "a" * 64,
                                       "a" * 65, "a" * 200, "a" * 55 + "/x"]), unique=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names)
def test_every_model_name_is_valid_unique_and_maps_back(given_names):
    mapping = ToolNames(given_names)
    model_names = [mapping.model_name(n) for n in given_names]
    assert all(is_model_name(m) for m in model_names)
    assert len(set(model_names)) == len(given_names)
    assert [mapping.original(m) for m in model_names] == given_names


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names, st.randoms(use_true_random=False))
def test_the_mapping_does_not_depend_on_the_order_of_the_tools(given_names, rnd):
    shuffled = list(given_names)
    rnd.shuffle(shuffled)
    first, second = ToolNames(given_names), ToolNames(shuffled)
    assert all(first.model_name(n) == second.model_name(n) for n in given_names)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names)
def test_valid_names_are_kept_and_others_keep_their_name_whatever_else_is_listed(given_names):
    mapping = ToolNames(given_names)
    for name in given_names:
        if is_model_name(name):
            assert mapping.model_name(name) == name
        else:  # the same name alone maps the same way: stable when other tools come and go
            assert mapping.model_name(name) == ToolNames([name]).model_name(name)


@given(lookalikes)
def test_lookalike_names_get_distinct_hashed_names(given_names):
    mapping = ToolNames(given_names)
    assert len({mapping.model_name(n) for n in given_names}) == len(given_names)


def test_a_collision_with_a_hashed_form_takes_a_longer_hash_deterministically():
    clash = hashed_name("a.b")  # a valid name that is exactly the hashed form of "a.b"
    for order in (["a.b", clash], [clash, "a.b"]):
        mapping = ToolNames(order)
        assert mapping.model_name(clash) == clash
        longer = mapping.model_name("a.b")
        assert longer != clash and longer.startswith("a_b_") and is_model_name(longer)
        assert mapping.original(longer) == "a.b"


def test_long_mcp_names_are_cut_to_64_characters_and_keep_their_start():
    name = "mcp__my-very-long-server-name__" + "tool_" * 10
    mapped = ToolNames([name]).model_name(name)
    assert len(mapped) == 64 and mapped.startswith(name[:55])


def test_duplicates_map_once_and_unknown_names_raise_key_error():
    mapping = ToolNames(["x", "x", "y.z"])
    assert len(mapping) == 2 and "x" in mapping and "y.z" not in mapping
    try:
        mapping.original("nope")
    except KeyError:
        pass
    else:
        raise AssertionError("an unknown model name must raise KeyError")


def test_names_that_are_not_strings_are_refused():
    try:
        ToolNames(["a", 3])
    except TypeError as exc:
        assert "string" in str(exc)
    else:
        raise AssertionError("expected TypeError")


def test_many_similar_names_stay_unique():
    rnd = random.Random(7)
    given = ["t." + "".join(rnd.choice("ab.") for _ in range(8)) for _ in range(2000)]
    given = list(dict.fromkeys(given))
    mapping = ToolNames(given)
    assert len({mapping.model_name(n) for n in given}) == len(given)
