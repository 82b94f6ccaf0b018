"""The runnable examples of workbench.testing.custom_ops (the custom ops the tests register) produce what
they show. workbench.library's, cpp_extension's and cuda's run in tests/test_docstring_examples.py, once:
an operator namespace can be defined only once per process."""
from workbench.testing.doctests import docstring_failures


def test_custom_ops_docstring_examples():
    assert not docstring_failures("workbench.testing.custom_ops")
