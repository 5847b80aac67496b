"""The keyword analyzer, as the index modules name it: defined in :mod:`bastion.analysis`
(below both keyword search and the answer's overlap checks, which share it)."""

from bastion.analysis import ENGLISH_STOPWORDS, Analyzer

__all__ = ["ENGLISH_STOPWORDS", "Analyzer"]
