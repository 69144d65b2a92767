"""Splitting LLVM text at top-level separators: one tokenizer for attribute lists and pass pipelines."""

from __future__ import annotations


def split_top_level(text: str, separators: str, brackets: str = "()", quotes: bool = False) -> list[str]:
    """`text` cut at the `separators` that stand outside `brackets` (pairs of open/close characters,
    e.g. "<>()") and, with `quotes`, outside "double quotes"; empty pieces are dropped."""
    opens, closes = brackets[0::2], brackets[1::2]
    items, current, depth, in_quote = [], "", 0, False
    for char in text:
        if quotes and char == '"':
            in_quote = not in_quote
        elif not in_quote and char in opens:
            depth += 1
        elif not in_quote and char in closes:
            depth -= 1
        if char in separators and not in_quote and depth == 0:
            if current:
                items.append(current)
            current = ""
        else:
            current += char
    if current:
        items.append(current)
    return items
