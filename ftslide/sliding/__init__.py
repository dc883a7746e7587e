"""Spare substitution: bindings of the C substitution core and topology model, and the sliding runtime's example runs."""
