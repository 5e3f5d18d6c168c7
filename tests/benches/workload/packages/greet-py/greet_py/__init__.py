"""A local package the workload installs from a wheel (no package index)."""


def greet(name):
    return f"hello, {name}"
