"""The kernels' numba cache (kernels/_jit.py): cleared when any kernel file changes, since numba
itself checks a cached kernel only against its own file, not against the helpers it inlines."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CACHE_PATH = "import minigrad.kernels._jit as j; print(j.kernel_cache_path())"


def _python(code, cache_dir):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir), "MINIGRAD_COMPILE_AHEAD": "0"}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_a_stale_stamp_clears_the_kernels_cache_and_a_current_one_keeps_it(tmp_path):
    path = _python(_CACHE_PATH, tmp_path)  # the first import writes the stamp
    stamp_file = os.path.join(path, "minigrad-kernels.stamp")
    current = open(stamp_file).read()
    cached = [os.path.join(path, name) for name in ("softmax.f-10.py3.nbi", "softmax.f-10.py3.1.nbc")]
    other = os.path.join(path, "someone_else.g-3.py3.nbi")  # not a kernel file's: left alone
    for name in cached + [other]:
        open(name, "w").close()

    _python(_CACHE_PATH, tmp_path)  # stamp unchanged: the cache stays
    assert all(os.path.exists(name) for name in cached)

    with open(stamp_file, "w") as f:  # as if a kernel file had changed since
        f.write("an older version\n")
    _python(_CACHE_PATH, tmp_path)
    assert not any(os.path.exists(name) for name in cached)
    assert os.path.exists(other)
    assert open(stamp_file).read() == current


def test_kernels_compile_and_load_again_after_clearing(tmp_path):
    code = ("import numpy as np; from minigrad.kernels import softmax as s; "
            "x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4); print(float(s.softmax_forward_numba(x).sum()))")
    assert abs(float(_python(code, tmp_path)) - 3.0) < 1e-5  # compiles
    assert abs(float(_python(code, tmp_path)) - 3.0) < 1e-5  # loads


def test_importing_minigrad_and_its_layers_loads_no_compiler():
    """numba (about 0.15 s to import) is loaded by the first kernel call, not by `import minigrad`:
    a script that only builds a model, or runs on the numpy backend, never pays for it."""
    code = ("import sys, minigrad, minigrad.nn, minigrad.nn.functional, minigrad.utils.data, transformer; "
            "print(sorted(m for m in ('numba', 'llvmlite', 'torch', 'sklearn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
