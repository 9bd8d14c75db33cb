"""How gradcheck's report reads (its checks themselves: test_autograd.py, test_gradcheck_locate.py)."""
import minigrad as mg


def test_a_failed_report_in_a_notebook_is_a_table_with_the_failing_row_marked():
    class Twice(mg.Function):  # d(2x)/dx = 2, but the backward says 3
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, g):
            return 3 * g

    a = mg.randn(3, dtype=mg.float64, requires_grad=True)
    b = mg.randn(2, dtype=mg.float64, requires_grad=True)
    report = mg.gradcheck(lambda a, b: Twice.apply(a).sum() + (b * b).sum(), [a, b], raise_exception=False)
    page = report._repr_html_()
    rows = page.split("<tr")[2:]  # after the header row
    assert len(rows) == 2
    assert "FAIL" in rows[0] and "background-color" in rows[0]
    assert "ok" in rows[1] and "background-color" not in rows[1]
    assert "Twice" in page and "pass rule" in page
