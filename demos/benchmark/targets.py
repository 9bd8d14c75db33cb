"""The goals minigrad is measured against, read off the sections' results.

Each target is a ratio and a threshold. Most ratios compare minigrad with another library and need
at least the threshold (> 1: minigrad faster); the busy-machine target is a slowdown, busy time /
quiet time, and needs at most its threshold. A target whose section did not run is "not measured".
"""
from . import busy
from .models import GPT_CONFIGS
from .report import fmt_ratio, format_table


def evaluate_targets(results, torch_missing=None):
    """-> [{target, ratio, threshold, needs (">=" or "<="), met, detail}].
    torch_missing: None if PyTorch took part, else why not."""
    targets = []

    def add(text, value, threshold, detail, needs_torch=False, at_most=False, why=None):
        needs = "<=" if at_most else ">="
        if value is None:
            why = why or (torch_missing if needs_torch and torch_missing else "not measured")
            targets.append({"target": text, "ratio": None, "threshold": threshold, "needs": needs, "met": None,
                            "detail": why})
        else:
            met = value <= threshold if at_most else value >= threshold
            targets.append({"target": text, "ratio": value, "threshold": threshold, "needs": needs, "met": bool(met),
                            "detail": detail})

    matmul = results.get("matmul")
    for kind, threshold, text in (("gpt2d", 0.8, "numba matmul >= 0.8x numpy GFLOP/s, 2-D GPT shapes"),
                                  ("batched", 1.0, "numba matmul >= 1.0x numpy GFLOP/s, batched attention")):
        rows = [r for r in matmul or [] if r["kind"] == kind]
        worst = min(rows, key=lambda r: r["ratio"]["numba/numpy"]) if rows else None
        add(text, worst and worst["ratio"]["numba/numpy"], threshold, worst and f"worst: {worst['case']}")

    softmax = [r for r in results.get("softmax") or [] if r["ratio"]["torch/numba"] is not None]
    worst = min(softmax, key=lambda r: r["ratio"]["torch/numba"]) if softmax else None
    add("softmax fwd+bwd no slower than PyTorch", worst and worst["ratio"]["torch/numba"], 1.0,
        worst and f"worst: {worst['shape'][0]} x {worst['shape'][1]}", needs_torch=True)

    train = results.get("train")
    measured = train and "seconds" in train and "torch" in train["seconds"]
    add("char_gpt training run no slower than PyTorch", train and train.get("ratio", {}).get("torch/minigrad"), 1.0,
        measured and f"minigrad {train['seconds']['minigrad']:.1f} s vs torch {train['seconds']['torch']:.1f} s "
                     f"({train['iterations']} iterations)",
        needs_torch=True, why=train and train.get("skipped"))

    gpt = {r["config"]: r for r in results.get("gpt") or []}
    for name, _, _ in GPT_CONFIGS:
        row = gpt.get(name)
        add(f"GPT training step no slower than PyTorch ({name})", row and row["ratio"]["torch/minigrad"], 1.0,
            row and f"minigrad {row['ms_per_step']['minigrad']:.1f} ms vs {row['torch_best']} "
                    f"{row['ms_per_step'][row['torch_best']]:.1f} ms" if row and row["torch_best"] else None,
            needs_torch=True)
    for name, _, _ in GPT_CONFIGS:  # minigrad.compile's aim: a step well past PyTorch's
        row = gpt.get(name)
        add(f"compiled GPT training step 1.5x PyTorch ({name})", row and row["ratio"].get("torch/compiled"), 1.5,
            row and f"compiled {row['ms_per_step']['compiled']:.1f} ms vs {row['torch_best']} "
                    f"{row['ms_per_step'][row['torch_best']]:.1f} ms" if row and row["torch_best"] else None,
            needs_torch=True)

    rows = {r["candidate"]: r for r in (results.get("busy") or {}).get("rows", [])}
    row = rows.get("minigrad")
    add(f"with one busy process beside it, the step is no more than {busy.TARGET}x its quiet time",
        row and row["ratio"]["busy/quiet"], busy.TARGET,
        row and f"minigrad, {row['threads']} threads: quiet {row['quiet_ms']:.1f} ms, busy {row['busy_ms']:.1f} ms",
        at_most=True)
    return targets


def format_targets(targets):
    table = [[t["target"], fmt_ratio(t["ratio"]), f"{t.get('needs', '>=')} {t['threshold']:.1f}x",
              "-" if t["met"] is None else ("met" if t["met"] else "NOT met"), t["detail"] or ""] for t in targets]
    return format_table(["target", "measured", "needs", "status", "detail"], table,
                        "targets (ratios against another library > 1: minigrad faster; a busy machine blurs them)")
