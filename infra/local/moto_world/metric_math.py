"""Metric math, the arithmetic part: what a metric-math alarm such as
`100 * errors / requests` needs, for world validation (world.py) and for
GetMetricData's expression queries (cloudwatch_ext.py). Pure Python, no moto.

An expression is numbers, query ids (`errors`: a lowercase letter, then
letters, digits or _, as CloudWatch's ids), `+ - * / ^`, unary minus and
parentheses. Functions (SUM, METRICS, FILL, IF, ...) and Metrics Insights
queries are not understood: parse() says so instead of guessing.

Between two time series an operator applies to the timestamps both have; a
series and a number combine point by point; a division by zero gives no
datapoint at that timestamp.
"""

from __future__ import annotations

import math
import re
from typing import Any, Union

ID = re.compile(r"[a-z][a-zA-Z0-9_]*")
TOKEN = re.compile(r"\s*(?:(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[-+*/^()]))")

# An expression tree: ("num", float) | ("id", str) | ("neg", node) | ("bin", op, left, right)
Node = tuple
Series = dict  # timestamp -> value
Value = Union[float, Series]


class MetricMathError(ValueError):
    """An expression this module cannot read: the message says why."""


def _tokens(expression: str) -> list[tuple[str, str]]:
    out, position = [], 0
    text = expression.rstrip()
    while position < len(text):
        match = TOKEN.match(text, position)
        if not match:
            raise MetricMathError(f"unexpected {text[position:].lstrip()[:10]!r} at character {position + 1}")
        kind = match.lastgroup or "op"
        out.append((kind, match.group(kind)))
        position = match.end()
    return out


def parse(expression: str) -> Node:
    """The tree of `expression`, or MetricMathError."""
    if not isinstance(expression, str) or not expression.strip():
        raise MetricMathError("an empty expression")
    tokens = _tokens(expression)
    position = 0

    def peek() -> tuple[str, str] | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal position
        token = peek()
        if token is None:
            raise MetricMathError("the expression ends too early")
        position += 1
        return token

    def additive() -> Node:
        node = multiplicative()
        while peek() in (("op", "+"), ("op", "-")):
            node = ("bin", take()[1], node, multiplicative())
        return node

    def multiplicative() -> Node:
        node = unary()
        while peek() in (("op", "*"), ("op", "/")):
            node = ("bin", take()[1], node, unary())
        return node

    def unary() -> Node:
        if peek() == ("op", "-"):
            take()
            return ("neg", unary())
        if peek() == ("op", "+"):
            take()
            return unary()
        return power()

    def power() -> Node:
        node = primary()
        if peek() == ("op", "^"):
            take()
            return ("bin", "^", node, unary())
        return node

    def primary() -> Node:
        kind, text = take()
        if kind == "number":
            return ("num", float(text))
        if kind == "name":
            if peek() == ("op", "("):
                raise MetricMathError(f"function {text}() is not supported (only + - * / ^ over ids and numbers)")
            if not ID.fullmatch(text):
                raise MetricMathError(f"{text!r} is no query id (ids start with a lowercase letter)")
            return ("id", text)
        if (kind, text) == ("op", "("):
            node = additive()
            if peek() != ("op", ")"):
                raise MetricMathError("a ( without its )")
            take()
            return node
        raise MetricMathError(f"unexpected {text!r}")

    node = additive()
    if peek() is not None:
        raise MetricMathError(f"unexpected {peek()[1]!r} after a complete expression")
    return node


def identifiers(node: Node) -> list[str]:
    """The query ids an expression reads, in order of first use."""
    found: list[str] = []

    def walk(n: Node) -> None:
        if n[0] == "id" and n[1] not in found:
            found.append(n[1])
        elif n[0] == "neg":
            walk(n[1])
        elif n[0] == "bin":
            walk(n[2])
            walk(n[3])

    walk(node)
    return found


def _apply(op: str, a: float, b: float) -> float | None:
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return None if b == 0 else a / b
        value = a ** b
        return value if isinstance(value, float) and math.isfinite(value) else None
    except (OverflowError, ZeroDivisionError, ValueError):
        return None


def evaluate(node: Node, lookup: Any) -> Value:
    """The value of a tree: a number, or a series {timestamp: value};
    `lookup(id)` gives a query's series (or number)."""
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "id":
        return lookup(node[1])
    if kind == "neg":
        inner = evaluate(node[1], lookup)
        return -inner if isinstance(inner, float) else {t: -v for t, v in inner.items()}
    op, left, right = node[1], evaluate(node[2], lookup), evaluate(node[3], lookup)
    if isinstance(left, float) and isinstance(right, float):
        value = _apply(op, left, right)
        return float("nan") if value is None else value
    if isinstance(left, float):
        pairs = {t: (left, v) for t, v in right.items()}
    elif isinstance(right, float):
        pairs = {t: (v, right) for t, v in left.items()}
    else:
        pairs = {t: (left[t], right[t]) for t in left if t in right}
    out = {}
    for t, (a, b) in pairs.items():
        value = _apply(op, a, b)
        if value is not None:
            out[t] = value
    return out
