"""minigrad.compile: a recorded step replayed on plain arrays gives the eager step's results, bit for
bit, and a step that a replay could not redo stays eager, with the reason in a warning."""
import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn, optim
from minigrad.nn import functional as F


def _gpt(dropout=0.0):
    from transformer import GPT, GPTConfig

    mg.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=17, block_size=8, n_layer=2, n_head=2, d_model=16, dropout=dropout))
    return model, optim.AdamW(model.parameters(), lr=1e-2)


def _gpt_step(model, opt):
    def step(x, y):
        _, loss = model(x, y)
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        return loss
    return step


def _batches(n, shape=(4, 8), vocab=17, seed=0):
    rng = np.random.default_rng(seed)
    return [(mg.tensor(rng.integers(0, vocab, shape)), mg.tensor(rng.integers(0, vocab, shape))) for _ in range(n)]


def _run_both(make, steps, batches, state=lambda m: m.parameters()):
    """Losses and final state of the same seeded model trained eagerly and through minigrad.compile."""
    results = []
    for compiled in (False, True):
        model, step = make()
        step = mg.compile(step) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a compiled step that fell back to eager would warn
            losses = [step(*batches[i % len(batches)]).item() for i in range(steps)]
        results.append((losses, [t.numpy().copy() for t in state(model)], step))
    return results


def test_a_replayed_gpt_step_gives_the_eager_losses_exactly_over_100_steps():
    def make():
        model, opt = _gpt()
        return model, _gpt_step(model, opt)

    (eager, eager_state, _), (replayed, replayed_state, step) = _run_both(make, 100, _batches(7))
    assert step.stats == {"eager": 1, "recorded": 1, "replayed": 98}
    assert replayed == eager  # the same functions on the same arrays in the same order: the same bits
    assert all(np.array_equal(a, b) for a, b in zip(eager_state, replayed_state))
    assert eager[-1] < eager[0] - 0.5  # and it did train


def test_dropout_draws_fresh_masks_at_each_replay_as_in_eager_mode():
    def make():
        model, opt = _gpt(dropout=0.2)
        return model, _gpt_step(model, opt)

    (eager, _, _), (replayed, _, step) = _run_both(make, 12, _batches(3))
    assert step.stats["replayed"] == 10
    assert replayed == eager
    assert len(set(eager[:3])) == 3 and eager[0] != eager[3]  # (batch 0 again at step 3: another mask)


def test_course_style_sgd_with_grad_none_and_data_updates_is_replayed():
    rng = np.random.default_rng(1)
    X = mg.tensor(rng.standard_normal((32, 3)).astype(np.float32))
    Y = mg.tensor(rng.integers(0, 2, 32))

    def make():
        g = mg.Generator().manual_seed(3)
        W1 = mg.randn(3, 8, generator=g).requires_grad_()
        b1 = mg.zeros(8, requires_grad=True)
        W2 = mg.randn(8, 2, generator=g).requires_grad_()
        params = [W1, b1, W2]

        def step(x, y):
            h = (x @ W1 + b1).tanh()
            loss = F.cross_entropy(h @ W2, y)
            for p in params:
                p.grad = None
            loss.backward()
            for p in params:
                p.data += -0.1 * p.grad
            return loss
        return params, step

    (eager, eager_state, _), (replayed, replayed_state, step) = _run_both(make, 20, [(X, Y)], state=lambda ps: ps)
    assert step.stats["replayed"] == 18
    assert replayed == eager
    assert all(np.array_equal(a, b) for a, b in zip(eager_state, replayed_state))


def test_batch_norm_running_statistics_are_updated_at_each_replay():
    rng = np.random.default_rng(2)
    batches = [(mg.tensor(rng.standard_normal((8, 3, 6, 6)).astype(np.float32)), mg.tensor(rng.integers(0, 4, 8)))
               for _ in range(3)]

    def make():
        mg.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(16, 4))
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return model, step

    state = lambda m: list(m.parameters()) + list(m.buffers())  # noqa: E731
    (eager, eager_state, _), (replayed, replayed_state, step) = _run_both(make, 9, batches, state)
    assert step.stats["replayed"] == 7
    assert replayed == eager
    assert all(np.array_equal(a, b) for a, b in zip(eager_state, replayed_state))  # running stats, count too


def test_new_argument_shapes_record_a_new_tape_and_old_ones_still_replay():
    model, opt = _gpt()
    step = mg.compile(_gpt_step(model, opt))
    short, full = _batches(2, shape=(4, 4)), _batches(2, shape=(4, 8))
    for x, y in [*full, *full, *short, *short, *full]:
        step(x, y)
    assert len(step.tapes) == 2
    assert step.stats == {"eager": 2, "recorded": 2, "replayed": 6}


def test_a_step_that_reads_a_value_into_python_stays_eager_and_says_why():
    model, opt = _gpt()
    inner = _gpt_step(model, opt)
    step = mg.compile(lambda x, y: inner(x, y).item())
    x, y = _batches(1)[0]
    with pytest.warns(RuntimeWarning, match=r"runs eagerly: it reads a tensor's value into Python \(t.item\(\)\)"):
        for _ in range(4):
            value = step(x, y)
    assert isinstance(value, float)
    assert step.stats == {"eager": 3, "recorded": 1, "replayed": 0} and not step.tapes


@pytest.mark.parametrize("body, reason", [
    (lambda x: (x * 2).sum() + mg.randn(1).sum(), "draws random numbers outside an op"),
    (lambda x: mg.tensor(np.exp(x.numpy())).sum(), "computes with a tensor's values in Python"),
    (lambda x: x.sum() if x.sum() > 0 else -x.sum(), r"bool\(t\)"),
])
def test_what_a_replay_could_not_redo_is_refused(body, reason):
    step = mg.compile(body)
    x = mg.tensor(np.arange(6, dtype=np.float32))
    with pytest.warns(RuntimeWarning, match=reason):
        results = [step(x).item() for _ in range(4)]
    assert not step.tapes and step.stats["replayed"] == 0
    if "random" in reason:
        assert len(set(results)) == 4  # each call drew its own numbers: every call ran eagerly
    else:
        assert results == [body(x).item()] * 4


def test_a_replay_reads_the_new_arguments_and_returns_fresh_tensors():
    step = mg.compile(lambda a, b: (a * b + 1.0, a - b))
    rng = np.random.default_rng(0)
    for _ in range(4):
        a, b = (mg.tensor(rng.standard_normal(5).astype(np.float32)) for _ in range(2))
        s, d = step(a, b)
        np.testing.assert_array_equal(s.numpy(), a.numpy() * b.numpy() + np.float32(1.0))
        np.testing.assert_array_equal(d.numpy(), a.numpy() - b.numpy())
    assert step.stats["replayed"] == 2


def test_the_tape_prints_as_a_list_of_ops():
    step = mg.compile(lambda a: (a.exp() * 2).sum())
    a = mg.tensor([1.0, 2.0])
    for _ in range(2):
        step(a)
    text = str(next(iter(step.tapes.values())))
    assert text.splitlines()[0].startswith("Tape: 3 ops")
    assert "Exp(%0)" in text and "Sum(" in text


def test_anomaly_mode_and_a_step_inside_another_run_eagerly():
    inner = mg.compile(lambda a: a * 3.0)
    outer = mg.compile(lambda a: inner(a).exp().sum())
    a = mg.tensor([0.5, 1.0])
    results = [outer(a).item() for _ in range(4)]
    assert results == [pytest.approx(np.exp(1.5) + np.exp(3.0), rel=1e-6)] * 4
    assert outer.stats["replayed"] == 2 and inner.stats["replayed"] == 0  # (inner ran inside outer's recording)
    with mg.detect_anomaly():
        outer(a)
    assert outer.stats["eager"] == 2


def test_calls_from_several_threads_replay_side_by_side():
    import threading

    step = mg.compile(lambda a, b: (a @ b).relu().sum(axis=0))
    rng = np.random.default_rng(0)
    pairs = [(mg.tensor(rng.standard_normal((6, 4)).astype(np.float32)),
              mg.tensor(rng.standard_normal((4, 3)).astype(np.float32))) for _ in range(8)]
    step(*pairs[0]), step(*pairs[0])  # eager, then recorded
    got = [None] * len(pairs)

    def worker(i):
        for _ in range(20):
            got[i] = step(*pairs[i]).numpy()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(pairs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (a, b), g in zip(pairs, got):
        np.testing.assert_array_equal(g, step.fn(a, b).numpy())  # the eager step: the same bits


def test_a_number_that_changes_at_every_call_is_named_once():
    step = mg.compile(lambda x, lr: x * lr)
    x = mg.tensor([1.0, 2.0])
    with pytest.warns(RuntimeWarning, match="arguments differ at almost every call") as caught:
        values = [step(x, 0.5 + i).numpy()[1] for i in range(100)]
    assert len(caught) == 1 and values == [2.0 * (0.5 + i) for i in range(100)]
    assert step.stats["replayed"] == 0 and len(step._seen) <= 4 * step.MAX_TAPES


def test_a_module_compiled_for_inference_under_no_grad():
    model, _ = _gpt()
    model.eval()
    forward = mg.compile(model)
    for x, _ in _batches(4):
        with mg.no_grad():
            logits, _ = forward(x)
            np.testing.assert_array_equal(logits.numpy(), model(x)[0].numpy())
    assert forward.stats == {"eager": 1, "recorded": 1, "replayed": 2}
