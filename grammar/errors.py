"""The one error grammar/ raises for its input: an invalid or unsupported grammar, or a compile past its time limit."""

from __future__ import annotations


class GrammarError(ValueError):
    """Raised at compile time for an invalid or unsupported grammar; says what and where."""
