"""One storage conformance suite: every archive, event sink and memory index backend
runs the same checks of the shared contract (see ``backends.py`` for the kinds)."""
