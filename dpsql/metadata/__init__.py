"""Metadata (step 2's input): the YAML model of tables, persons and bounds.

``reading`` parses and checks a document (every problem with its path);
``model`` builds ``Metadata``, ``Table`` and ``Column`` from a checked document.
"""
from .model import Column, Metadata, Table, check

__all__ = ["Column", "Metadata", "Table", "check"]
