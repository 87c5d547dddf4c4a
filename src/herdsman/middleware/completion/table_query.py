"""The command that answers "which row of this table has the most (the least) of something".

A small model asked which item of a CSV file has the smallest quantity reads the rows and names
one by eye, often the wrong one, and told to compare with a command it writes the name it guessed
as a Python program. The completion check's ``compare.not_made`` finding therefore carries a
query the harness runs when the request names a table file (``.csv``, ``.tsv``): a short Python
program, run in the sandbox on the file as it is then, that takes the numeric column the request
names by its header (else the table's only numeric column), picks the row with the smallest or
largest value, and prints its label (the row's first non-numeric field) and, on a second line,
the value it was picked by. Which way to compare comes from the superlative the request says
(:func:`~herdsman.middleware.completion.intent_words.extreme`); a word that does not say (oldest,
newest) makes no query. Nothing of the request but its words, as a JSON list, goes into the
program. Hand-written: a dozen lines of the csv module; no library answers this question.
"""

from __future__ import annotations

import json
import re

from herdsman.sandbox.shell_words import python_heredoc

MARKER = "HERDSMAN_TABLE_QUERY"
_TABLE = re.compile(r"\.(csv|tsv)$", re.IGNORECASE)
_WORD = re.compile(r"\w+")

_PROGRAM = """\
import csv, json, sys
path, words, pick = {path}, set(json.loads({words})), {pick}
with open(path, newline='', encoding='utf-8') as f:
    rows = [r for r in csv.reader(f, delimiter={delimiter}) if any(c.strip() for c in r)]
def num(v):
    try:
        return float(v.strip())
    except ValueError:
        return None
head, body = rows[0], rows[1:]
width = [i for i in range(len(head)) if body and all(i < len(r) and num(r[i]) is not None for r in body)]
named = [i for i in width if head[i].strip().lower() in words]
cols = named or width
if len(cols) != 1:
    print('columns:', ', '.join(head), '- name the column to compare')
    sys.exit(1)
c = cols[0]
best = pick(body, key=lambda r: num(r[c]))
label = next((i for i in range(len(head)) if i != c and num(best[i]) is None), None)
print(best[label] if label is not None else best[c])
print('(' + head[c] + ' = ' + best[c] + ', the ' + {way} + ' of ' + str(len(body)) + ' rows)')"""


def table_query(request: str, paths: list[str], direction: str | None) -> str | None:
    """The bash command that prints the label of the row with the ``direction`` ("min" or
    "max") value of the first table file of ``paths`` (the request's paths), or None: no table
    named, or no direction."""
    table = next((p for p in paths if _TABLE.search(p)), None)
    if table is None or direction not in ("min", "max"):
        return None
    words = json.dumps(sorted({w.lower() for w in _WORD.findall(request)}), ensure_ascii=True)
    program = _PROGRAM.format(
        path=json.dumps(table),
        words=json.dumps(words),
        pick=direction,
        delimiter=repr("\t" if table.lower().endswith(".tsv") else ","),
        way=repr("least" if direction == "min" else "most"),
    )
    return python_heredoc(program, MARKER)
