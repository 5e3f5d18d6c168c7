"""The fixture's Python package (its tests run with the system Python)."""


def shout(name):
    return f"hello, {name}".upper()
