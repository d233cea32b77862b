"""The public surface is what __all__ says, and every name in it exists."""

import archiver


def test_all_names_exist_and_are_documented():
    for name in archiver.__all__:
        member = getattr(archiver, name)
        if name != "__version__":
            assert member.__doc__, name


def test_public_names_are_listed():
    public = {n for n in dir(archiver) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(archiver, n)).__name__ == "module"}
    assert public - modules == set(archiver.__all__) - {"__version__"}


def test_an_unknown_name_is_an_attribute_error():
    assert not hasattr(archiver, "no_such_name")
