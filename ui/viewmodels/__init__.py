"""The window's state and decisions in plain Python (no Qt): what the widgets show, not how.

import-linter keeps this package free of PySide6, qasync, pyqtgraph and shiboken6 (pyproject.toml),
so everything here is tested with plain pytest (tests/ui/test_viewmodels.py).
"""
