"""Smoke test of `python -m demos.benchmark.overhead` on the tiny MLP: it runs, every part of the step
is a time, and the engine's own functions are back in place afterwards. No timing assertions: the
numbers depend on the machine."""
import math

import minigrad
from demos.benchmark import overhead
from minigrad import autograd

PARTS = ["step", "ops' forward", "model code", "ops' backward", "walk", "optimizer", "compiled step"]


def test_the_split_of_an_mlp_step_runs_and_restores_the_engine(capsys):
    apply, call_backward = autograd.Function.__dict__["apply"], autograd._call_backward
    threads = minigrad.get_num_threads()
    try:
        ((name, row),) = overhead.main(["--only", "mlp", "--steps", "3"])
    finally:
        minigrad.set_num_threads(threads)
    assert name.startswith("MLP") and list(row) == PARTS
    assert all(math.isfinite(v) for v in row.values())
    assert row["ops' forward"] > 0 and row["ops' backward"] > 0 and row["step"] > 0 and row["compiled step"] > 0
    assert autograd.Function.__dict__["apply"] is apply and autograd._call_backward is call_backward
    assert "MLP 2-32-2" in capsys.readouterr().out


def test_op_timer_stays_balanced_when_an_op_calls_another_inside_its_forward():
    class Outer(minigrad.Function):  # its forward runs a whole other op through apply
        @staticmethod
        def forward(ctx, a):
            return (minigrad.tensor(a) * 2).numpy()

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    with overhead._OpTimer() as timer:
        y = Outer.apply(x)
        y.sum().backward()
    assert timer.depth == 0 and timer.forward > 0 and timer.backward > 0
    assert x.grad.tolist() == [2.0, 2.0]
