"""A griffe extension for the API reference (mkdocs.yml): shows reST-flavoured docstrings
as Markdown without changing them.

The docstrings are written for ``help()`` and doctest: examples are bare ``>>>`` runs,
tables are reST simple tables and formulas ``:math:`...``` roles. Markdown would read a
``>>>`` run as nested block quotes (and ``x[a][b]`` in it as a reference link) and a
table as one paragraph, so before griffe parses a docstring this fences each doctest run
as ``pycon`` code and each simple table as text, escapes a ``>`` that starts a line of
text, and turns a math role into code.
"""

import re

import griffe

_TABLE_RULE = re.compile(r"^\s*=+(\s+=+)+\s*$")
_MATH = re.compile(r":math:`([^`]*)`")


def markdown_docstring(text: str) -> str:
    """The docstring ``text`` with doctest runs and simple tables fenced, math as code."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        indent = line[: len(line) - len(line.lstrip())]
        if line.lstrip().startswith("```"):  # an existing fence: copied as it is
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("```"):
                j += 1
            out.extend(lines[i : j + 1])
            i = j + 1
        elif line.lstrip().startswith(">>>"):  # a doctest run ends at a blank line
            j = i
            while j < len(lines) and lines[j].strip():
                j += 1
            out.append(f"{indent}```pycon")
            out.extend(lines[i:j])
            out.append(f"{indent}```")
            i = j
        elif _TABLE_RULE.match(line):  # a simple table: rule, header, rule, rows, rule
            rules, j = 0, i
            while j < len(lines) and rules < 3 and lines[j].strip():
                rules += bool(_TABLE_RULE.match(lines[j]))
                j += 1
            out.append(f"{indent}```text")
            out.extend(lines[i:j])
            out.append(f"{indent}```")
            i = j
        else:  # a line of text starting ">" (">= 3") is no block quote either
            out.append(re.sub(r"^(\s*)>", r"\1\\>", line))
            i += 1
    return _MATH.sub(r"`\1`", "\n".join(out))


class DoctestBlocks(griffe.Extension):
    """Rewrites every docstring griffe loads with ``markdown_docstring``."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
