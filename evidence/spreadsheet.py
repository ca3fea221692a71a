"""CSV cells a spreadsheet shows as text, never runs (OWASP "CSV injection").

Every CSV the application writes (the audit package's cards.csv, the figures
download) passes its cells through `spreadsheet_cell`; the JSON and JSONL beside
them keep the exact text.
"""

from __future__ import annotations

# A spreadsheet runs a cell that starts with one of these as a formula (OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value) -> str:
    """The value as a CSV cell a spreadsheet shows as text: a formula start is quoted with `'`.

    Excel, LibreOffice and Google Sheets run a cell that starts with one of FORMULA_STARTS:
    a claim, a reason, a passage or an id could be such a cell. The quote is what a
    spreadsheet itself puts before text typed that way.
    """
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
