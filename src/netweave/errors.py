"""The one exception type users see.

Every error caused by bad input (a malformed file, an unknown node, an impossible request) is
raised as :class:`NetweaveError` with a one-line message that says what is wrong, where, and how to
fix it. The CLI prints that line and exits with status 2; it never shows a traceback for these.
"""

from __future__ import annotations


class NetweaveError(Exception):
    """Bad input or an impossible request; ``str(err)`` is one line meant for the user."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))
