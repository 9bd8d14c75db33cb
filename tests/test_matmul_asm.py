"""The vector tile kernel compiles to the loop it is meant to: per step of k, MR x NR / W fused
multiply-adds on full-width registers (W floats each), and no access to the stack inside the loop,
i.e. no accumulator or pointer spilled to memory and reloaded; and, before the loop, prefetch
instructions for the lines of c the next tile writes.

Checked in a fresh interpreter with an empty numba cache, for two targets:
- AVX2, as LLVM compiles it for a Haswell on any x86 host that can run AVX2 (NUMBA_CPU_NAME and a
  Haswell feature list, so that an AVX-512 host's features do not leak in): the 6 x 16 tile,
  12 accumulators in ymm registers;
- this host's own tile and kernel, natively (8 x 32 loops with zmm registers on AVX-512, the AVX2
  tile and kernel on AVX2).
"""
import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest

from demos.benchmark.matmul_kernels import tile_loops
from minigrad.kernels import _cpu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HASWELL_FEATURES = ("+sse,+sse2,+sse3,+ssse3,+sse4.1,+sse4.2,+popcnt,+cx16,+avx,+avx2,+fma,+f16c,+bmi,+bmi2,"
                    "+lzcnt,+movbe,-avx512f,-avx512bw,-avx512cd,-avx512dq,-avx512vl")

# compile only the tile kernel (seconds, not the whole matmul), check it runs, print its loops
_COMPILE_TILE = """
import importlib, json
import numpy as np
from demos.benchmark.matmul_kernels import tile_loops
M = importlib.import_module("minigrad.kernels.matmul")
k = 4 * M.K_UNROLL + 3  # main loop and the one-step loop both run
a = np.arange(2 * M.MR * k, dtype=np.float32).reshape(2 * M.MR, k) % 7
b = np.arange(k * M.NR, dtype=np.float32).reshape(k, M.NR) % 5
c = np.zeros((2 * M.MR, M.NR), np.float32)
M._tile_kernel(a, 0, 2, 2 * M.MR - 1, 0, k, b, 0, 0, c, 0, 0, False, np.zeros(0, np.float32), 0)
assert np.array_equal(c, a @ b), "the tile kernel computed a wrong product"  # small integers: exact
asm = M._tile_kernel.inspect_asm(M._tile_kernel.signatures[0])
print(json.dumps({"tile": [M.MR, M.NR], "unroll": M.K_UNROLL, "vector_bytes": M.VECTOR_BYTES,
                  "loops": tile_loops(asm), "prefetches": asm.count("\tprefetch")}))
"""


def _host_family():
    try:
        import llvmlite.binding as llvm

        features = {name for name, on in llvm.get_host_cpu_features().items() if on}
    except Exception:
        return None
    return _cpu.simd_family(features)


def _compile_tile(tmp_path, **env):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "MINIGRAD_MATMUL_TILE")}
    environment.update(NUMBA_CACHE_DIR=str(tmp_path), MINIGRAD_QUIET_COMPILE="1",
                       **{"MINIGRAD_MATMUL_KERNEL": "vector", **env})
    result = subprocess.run([sys.executable, "-c", _COMPILE_TILE], cwd=REPO, env=environment,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _assert_tile_loop(report, register):
    rows, cols = report["tile"]
    lanes = report["vector_bytes"] // 4  # floats per register
    per_step = rows * cols // lanes  # one FMA per accumulator register
    loops = report["loops"]
    assert loops, "no loop with fused multiply-adds in the tile kernel"
    for loop in loops:
        assert loop["registers"] == [register], loop
        assert loop["fmas"] % per_step == 0, loop  # whole steps of k
        assert loop["stack"] == [], f"stack accesses inside the tile loop: {loop['stack']}"
    counts = {loop["fmas"] for loop in loops}
    assert per_step * report["unroll"] in counts  # the unrolled main loop
    # and the loop over the last steps (and strided rows of a), one by one or, as LLVM may unroll
    # a loop whose count it knows, a few at a time
    assert min(counts) < per_step * report["unroll"] or report["unroll"] == 1
    # outside those loops: the lines of c for the next tile asked for, at least one per row
    assert report["prefetches"] >= rows, f"{report['prefetches']} prefetch instructions in the tile kernel"


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64") or _host_family() not in ("avx2", "avx512"),
                    reason="compiles and runs AVX2 code: needs an x86 CPU with AVX2 and FMA")
def test_avx2_tile_keeps_twelve_accumulators_in_registers(tmp_path):
    report = _compile_tile(tmp_path, NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES=HASWELL_FEATURES,
                           MINIGRAD_MATMUL_TILE="6x16")
    assert report["tile"] == [6, 16] and report["vector_bytes"] == 32
    _assert_tile_loop(report, "ymm")  # 12 FMAs per step of k


def _llvm_14_on_zen():
    """LLVM 14 (numba 0.58, setup.cfg's floor), compiling for this host's own AMD Zen core."""
    try:
        import llvmlite.binding as llvm

        return llvm.llvm_version_info[0] < 15 and llvm.get_host_cpu_name().startswith("znver")
    except Exception:
        return False


@pytest.mark.skipif(_host_family() not in ("avx2", "avx512"), reason="an x86 CPU with AVX2 or AVX-512")
@pytest.mark.xfail(_llvm_14_on_zen(), reason="measured on a Zen 3: LLVM 14, scheduling for znver3, keeps 2 of the "
                   "12 accumulators on the stack (4 moves per step of k); the tile still ran 65-72 GFLOP/s there, "
                   "2.5x the 4x16 loops' 26-30. LLVM 22 (numba 0.68) spills nothing", strict=False)
def test_native_tile_keeps_its_accumulators_in_registers(tmp_path):
    """This host's own tile and kernel, as a program here runs them (8 x 32 loops on AVX-512)."""
    family = _host_family()
    report = _compile_tile(tmp_path, MINIGRAD_MATMUL_TILE="x".join(map(str, _cpu.TILES[family])),
                           MINIGRAD_MATMUL_KERNEL=_cpu.KERNEL_OF[family])
    if _cpu.KERNEL_OF[family] == "loops":
        report["unroll"] = 1  # LLVM's loop, one step per turn
    _assert_tile_loop(report, {"avx512": "zmm", "avx2": "ymm"}[family])
    if family == "avx512":
        assert report["tile"][0] * report["tile"][1] // 16 >= 16  # at least 16 zmm accumulators


def test_tile_loops_finds_spills():
    """The checker itself: a loop that reloads from the stack is reported, one without is clean."""
    asm = textwrap.dedent("""
    f:
    .LBB0_1:
        vbroadcastss (%rax,%rdx,4), %ymm14
        vfmadd231ps %ymm12, %ymm14, %ymm11
        vmovups 32(%rsp), %ymm13
        vfmadd231ps %ymm13, %ymm14, %ymm10
        incq %rdx
        jl .LBB0_1
    .LBB0_2:
        vfmadd231ps (%rbp,%rcx), %ymm1, %ymm2
        jne .LBB0_2
    """)
    spilled, clean = tile_loops(asm)
    assert spilled["fmas"] == 2 and spilled["registers"] == ["ymm"] and len(spilled["stack"]) == 1
    assert clean["fmas"] == 1 and clean["stack"] == []  # no frame pointer: %rbp is a plain register
    # the same loop in a function that keeps its frame pointer in %rbp: a stack access
    second_loop = ".LBB0_2:" + asm.split(".LBB0_2:")[1]
    (framed,) = tile_loops("g:\n\tpushq %rbp\n\tmovq %rsp, %rbp\n" + second_loop)
    assert len(framed["stack"]) == 1


def test_the_kernel_setting_is_checked(monkeypatch):
    monkeypatch.setenv("MINIGRAD_MATMUL_KERNEL", "vector")
    assert _cpu.vector_tile() and _cpu.kernel_forced()
    monkeypatch.setenv("MINIGRAD_MATMUL_KERNEL", "loops")
    assert not _cpu.vector_tile()
    monkeypatch.setenv("MINIGRAD_MATMUL_KERNEL", "fast")
    with pytest.raises(ValueError, match="MINIGRAD_MATMUL_KERNEL"):
        _cpu.vector_tile()
    monkeypatch.delenv("MINIGRAD_MATMUL_KERNEL")
    assert _cpu.vector_tile() == (_cpu.KERNEL_OF[_cpu.simd_family()] == "vector") and not _cpu.kernel_forced()


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="an x86 CPU name")
def test_a_cpu_name_alone_compiles_for_that_cpus_own_features(tmp_path):
    """NUMBA_CPU_NAME=haswell without NUMBA_CPU_FEATURES: numba on its own adds the host's features
    to the name (AVX-512 instructions on an AVX-512 host); minigrad asks for the name's own (AVX2)."""
    code = textwrap.dedent("""
        import numpy as np
        from minigrad.kernels._jit import jit
        from minigrad.kernels import _cpu
        @jit(cache=False, fastmath={"contract"})
        def axpy(a, b, c):
            for i in range(a.size):
                c[i] = a[i] * b[i] + c[i]
        a = np.ones(1024, np.float32)
        axpy(a, a, a.copy())
        asm = next(iter(axpy.inspect_asm().values()))
        print("zmm" in asm, "ymm" in asm, "vfmadd" in asm, sorted(_cpu.target_features() & {"avx2", "avx512f"}))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME")}
    env.update(NUMBA_CPU_NAME="haswell", NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True", "['avx2']"], out.stdout
