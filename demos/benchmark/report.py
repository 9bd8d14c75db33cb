"""Numbers and tables: progress messages, ratios, and the fixed-width tables every section prints."""
import sys


def log(message):
    """Progress, on stderr (stdout carries the tables, or the JSON document with --json)."""
    print(message, file=sys.stderr, flush=True)


def ratio(numerator, denominator):
    """numerator / denominator, or None when either is missing (or the denominator is not positive)."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_ratio(value):
    return "-" if value is None else f"{value:.2f}x"


def format_table(headers, rows, title=None):
    """Fixed-width text table: the first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    out = [] if title is None else [title]
    out += [line(cells[0]), "  ".join("-" * w for w in widths)] + [line(r) for r in cells[1:]]
    return "\n".join(out)
