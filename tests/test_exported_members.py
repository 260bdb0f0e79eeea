"""The public face: raider_sync.__all__ is sorted and every name in it can be imported."""
import importlib

import raider_sync


def test_all_is_sorted_and_unique():
    assert raider_sync.__all__ == sorted(raider_sync.__all__)
    assert len(raider_sync.__all__) == len(set(raider_sync.__all__))


def test_every_exported_name_is_importable():
    module = importlib.import_module("raider_sync")
    for name in raider_sync.__all__:
        assert hasattr(module, name), name
        exec(f"from raider_sync import {name}", {})


def test_public_classes_say_they_live_in_raider_sync():
    for name in raider_sync.__all__:
        member = getattr(raider_sync, name)
        if isinstance(member, type) or callable(member):
            assert member.__module__.startswith("raider_sync"), name
