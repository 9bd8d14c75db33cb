"""Matrix multiplication: ``c = a @ b`` over matching batch axes.

``matmul_numpy`` is the reference: one call to ``np.matmul``, which hands the work to BLAS.

``matmul_numba`` is a small blocked matmul in the style of GotoBLAS/BLIS. A naive triple loop
reaches only a fraction of the CPU's speed because every multiply-add also loads and stores a
value of ``c``. Here the work is cut up so that the arithmetic runs from registers and the
operands come from the nearest caches:

- ``c`` is computed in tiles of ``MR x NR`` that live in SIMD registers for the whole sweep over
  ``k``. Each step ``p`` loads NR numbers of ``b`` and MR numbers of ``a`` and does MR x NR
  multiply-adds (``_tile_kernel``). The tile is chosen for the CPU's registers (``_cpu.py``):
  8 x 32 on AVX-512 (16 accumulators of 16 floats, 2 loads of ``b``, 8 broadcasts of ``a``),
  6 x 16 on AVX2, 8 x 8 on arm64 NEON, 4 x 8 with plain SSE.
- The loop over ``k`` inside a tile is written one of two ways (``MINIGRAD_MATMUL_KERNEL``):
  ``loops``, scalar loops that LLVM's vectorizers turn into SIMD code (``_tile_kernel``), or
  ``vector``, explicit vector code (``_fma_tile``, which emits ``_fma_tile_loop``): vector loads
  of ``b``, each number of ``a`` splat across a register, one fused multiply-add per accumulator
  register, the accumulators carried from step to step in registers, four steps per turn. It
  needs MR * NR / W + NR / W + 1 registers (W numbers each): a 6 x 16 tile, 12 accumulators, fits
  the 16 registers of AVX2, where the scalar loops spill it to the stack. AVX2 uses it (6 x 16,
  vector); the other CPUs keep the loops, which were as fast there (``_cpu.KERNEL_OF``).
  ``tests/test_matmul_asm.py`` reads the compiled loop: per step of k, MR * NR / W FMAs and no
  stack access.
- Tiles that stick out of ``c`` (past its last column or row) are computed in a scratch buffer,
  ``edge``, up to 16 tiles below each other in one call of the tile kernel, and their part of ``c``
  is copied out (``matmul_block``): a product 10 or 16 columns wide is all such tiles (with AVX-512's
  32-column strips), one 65 wide a third of them.
- Before a tile's loop over ``k``, the tile kernel asks the CPU for the cache lines of ``c`` that the
  next tile will write (``_prefetch_rows``): in a training step ``c`` is fresh memory, and the lines
  then arrive while the loop runs instead of stalling the stores at its end.
- ``k`` is cut into blocks of at most ``KC`` steps, and ``b`` into strips of NR columns. A
  ``KC x NR`` piece of a strip stays in the L1 cache while the tiles run down the rows of ``a``
  (``matmul_block``), as many rows per pass as fit ``MC x KC`` numbers (128 KB), which stay in L2:
  ``MC`` rows at full blocks of k, more when k is short (``_rows_per_pass``).
- ``b`` is *packed*: each piece of a strip is copied into a contiguous ``(KC, NR)`` buffer, padded
  with zeros on the right, so that the tile reads it at unit stride whatever the layout of ``b``
  (transposed views, slices, broadcasts) and without the cache conflicts of long rows. Small
  row-major pieces are read in place instead: for them the copy would cost more than it saves.
  The loops run in BLIS's order (``matmul_block``): for each block of k, every strip a task computes is
  packed once, side by side, and then each pass of rows of ``a`` runs over all of them, so a
  piece of ``b`` is copied once per task however many rows ``a`` has.
- ``a`` is read in place through its strides: the tile needs one number per row and step, which
  it broadcasts, so the layout of ``a`` hardly matters. Only blocks of a large ``a`` are copied,
  so that they stay in L2 (``_pack_rows``).
- The work is split into independent *tasks* (a range of batch slices, of column strips, of
  rows) that minigrad's threads share out (``_run_tasks``, ``_parallel.parallel_for``). Tasks
  that cut the rows of one product each pack all of ``b`` they read, so those are one per thread
  (``_matmul_compiled``).
- A layer's backward needs two products of equal work: dx = g W and dW = g^T x. Cut in two for two
  threads, a mid-sized product keeps each thread busy only part of the time (both wait for the
  slower half, and each packs the b it reads); so ``matmul_pair_numba`` gives each thread one whole
  product instead (``_product_pair``), as long as each is large enough to be worth a thread.
- Small 2-D products (at most ``BLAS_BELOW`` multiply-adds) skip all of this: there the call into
  compiled code costs more than the arithmetic, and ``matmul_numba`` hands them to numpy.

The inputs reach the compiled code as 3-D strided views ``(batch, rows, cols)``, with exactly one
compiled version per dtype (see ``_signature``), whatever the layout of the arrays, compiled the
first time that dtype is multiplied.

A few numba details recur below:
- An index written ``np.uintp(i)`` is unsigned. numba then skips its handling of negative
  indices (``x[-1]``), a compare-and-add per access that also stops LLVM from using vector loads.
- Code inside ``if b.strides[1] == _number_size(b):`` is compiled knowing that the stride is the
  size of one number, i.e. that the row is contiguous, so it can use vector loads there.
- Literal constants passed to a compiled function (``f(x, 0)``) make numba compile a version
  of ``f`` for that constant; hence the variables ``zero`` and ``one`` below.
- ``inline=INLINE`` on a small helper makes numba copy its body into each caller before
  compiling (with LLVM 15 and newer: see ``_jit.INLINE``). Otherwise the helper is compiled on its
  own, and each caller links that code in, and LLVM optimizes it and turns it into machine code
  once more for every caller. On a first start that cost 0.1 to 0.5 s per helper and caller.
  The tile kernel and ``matmul_block`` stay separate functions: they are large, and LLVM must not
  inline them anyway (``_never_inline``). The compiled kernels that run products (``_run_tasks``,
  ``_product_pair``, and those of attention.py, conv2d.py and rnn.py) call matmul_block at its
  address (``call_block``), so it is compiled once per process and linked into none of them: a first
  start compiles matmul in about 3 s instead of 4, and attention in 3 instead of 6.5.
  ``_copy_row`` also stays separate: inlined into the tile kernel, products ran 2-4% slower.
"""

import numpy as np

# _jit first: it sets numba's compiler options, which numba reads when it is first imported
from ._jit import INLINE, jit, numba, typed_jit  # isort: skip
from ._entries import call_native  # noqa: E402
from ._cpu import choose_tile, kernel_forced, vector_bytes, vector_tile  # noqa: E402
from . import _warm  # noqa: E402
from ._parallel import get_num_threads, parallel_for  # noqa: E402
from numba import types  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.core.imputils import impl_ret_borrowed  # noqa: E402
from numba.extending import intrinsic, overload  # noqa: E402
from numba.np.numpy_support import as_dtype  # noqa: E402
from llvmlite import ir  # noqa: E402

# rows x columns of a register tile of c, chosen for the CPU's registers (see _cpu.py); a forced
# tile is not cached (CACHE), since numba's cache does not know which tile it compiled
MR, NR, _forced = choose_tile()
VECTOR_BYTES = vector_bytes()  # bytes in one SIMD register of this CPU: 64 with AVX-512, 32 AVX2, 16 else
VECTOR_TILE = vector_tile()  # the tile's k loop as explicit vector code (_fma_tile), or as scalar loops
CACHE = not _forced and not kernel_forced()
K_UNROLL = 4  # steps of k per turn of _fma_tile's main loop
TILE_SIZE = MR * NR  # numbers in one register tile (a named constant: numba sees it as a literal)
KC = 256  # longest block of the k axis: a packed piece of b is KC x NR numbers (16-32 KB in float32)
MC = 128  # rows of a that one pass of the strips reads, at k blocks of KC: MC x KC numbers (128 KB)
# stay in L2. With shorter k blocks a pass takes more rows (the same 128 KB of a): every pass packs
# each strip of b again, and for a short k (a GPT's K = 64) that copy would cost a quarter of the
# arithmetic.
DIRECT_B_BYTES = 32 * 1024  # read b in place if the rows of a piece span at most this many bytes
PACK_A_BYTES = 64 * 1024  # copy blocks of a this large (or larger) into a contiguous buffer,
PACK_A_STRIPS = 8  # if at least this many strips will read the copy
EDGE_ROWS = 16 * MR  # rows of the buffer for tiles that stick out of c: 16 tiles per call (16 KB in float32)
PANEL_STRIPS = 4096 // NR  # strips of b packed side by side per block of k: KC x 4096 numbers at most (4 MB)
SERIAL_FLOPS = 1_000_000  # below this many flops, handing work to other threads costs more than it saves
TASKS_PER_THREAD = 4  # most tasks to share out per thread: a thread slowed by another program takes fewer
TASK_FLOPS = 4_000_000  # but no task smaller than this: each packs the parts of a and b it reads
BLAS_BELOW = 65_536  # 2-D float32 products of at most this many multiply-adds (M K N) go to numpy's
# BLAS call: there the call into compiled code costs more than the arithmetic (a 256x2x32 product:
# about 4 us against 2), and BLAS runs them on one thread. (K = 1 stays here: numpy is slow there.)


def matmul_numpy(a, b, bias=None):
    """Reference: ``a @ b`` (+ ``bias``) with numpy.

    a: (*batch, M, K), b: (*batch, K, N), same batch shape and dtype; bias: None or (N,).
    Returns a new C-contiguous array (*batch, M, N).
    """
    out = np.matmul(a, b)
    if bias is not None:
        out += bias
    return out


def matmul_pair_numpy(a1, b1, a2, b2, rows=None):
    """Reference: ``(a1 @ b1, a2 @ b2, the sum of the rows of rows)`` with numpy, for 2-D operands
    of one dtype; the sum is None without ``rows``."""
    return matmul_numpy(a1, b1), matmul_numpy(a2, b2), None if rows is None else rows.sum(axis=0)


# --------------------------------------------------------------------------------------------
# Compile-time helpers
# --------------------------------------------------------------------------------------------


@intrinsic
def _stack_pointer(typingctx, like, size):
    """Pointer to ``size`` numbers of ``like``'s dtype in the calling function's stack frame.

    Why not ``np.empty``: numba puts arrays on the heap, and LLVM cannot prove heap memory does
    not overlap the input arrays, so it would load and store the accumulators at every step.
    Stack memory that never escapes can be kept in registers.
    The memory is only valid until the calling function returns.
    """
    if not isinstance(size, types.IntegerLiteral):
        return None  # ask numba to retry with the literal value of `size`
    count = size.literal_value
    dtype = like.dtype

    def codegen(context, builder, signature, args):
        # alloca in the entry block: the form LLVM promotes to registers
        return cgutils.alloca_once(builder, context.get_data_type(dtype), size=count)

    return types.CPointer(dtype)(like, size), codegen


@intrinsic
def _never_inline(typingctx):
    """Called first thing in a function, marks that function "noinline" for LLVM.

    LLVM may copy (inline) a compiled function into its callers, and numba then optimizes the
    copy again with each caller: the tile kernel would be compiled once per level of callers
    above it. The few calls saved are not worth that compile time here.
    """

    def codegen(context, builder, signature, args):
        builder.function.attributes.add("noinline")  # builder.function: the calling function
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def _prefetch_rows(typingctx, c, row, n_rows, col):
    """Ask the CPU to fetch, for writing, the cache lines of c[row:row+n_rows, col:col+NR].

    A product writes each line of ``c`` once, at the end of a tile. Fresh from the allocator (as
    the outputs of a training step's ops are), those lines sit in main memory, and each store would
    wait for its line. Asked for at the start of the tile, the lines arrive while the tile's loop
    over k runs. (BLIS and OpenBLAS prefetch the tile of c the same way.) Rows past the end of c are
    not asked for; the hint never faults and changes no result."""
    if not all(isinstance(t, types.Integer) for t in (row, n_rows, col)):
        return None
    line = 64

    def codegen(context, builder, signature, args):
        row_, n_, col_ = (context.cast(builder, v, t, types.intp) for v, t in zip(args[1:], signature.args[1:]))
        intp = context.get_value_type(types.intp)
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        prefetch = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
                                                  "llvm.prefetch.p0i8")
        c_array = context.make_array(signature.args[0])(context, builder, args[0])
        row_stride, col_stride = cgutils.unpack_tuple(builder, c_array.strides, 2)
        base = builder.gep(builder.bitcast(c_array.data, byte_ptr),
                           [builder.add(builder.mul(row_, row_stride), builder.mul(col_, col_stride))])
        size = context.get_abi_sizeof(context.get_data_type(signature.args[0].dtype))
        width = NR * size  # bytes of one row of the tile
        for r in range(MR):
            with builder.if_then(builder.icmp_signed("<", ir.Constant(intp, r), n_)):
                at = builder.gep(base, [builder.mul(ir.Constant(intp, r), row_stride)])
                for offset in sorted({*range(0, width, line), width - 1}):  # every line the row touches
                    builder.call(prefetch, [builder.gep(at, [ir.Constant(intp, offset)]), i32(1), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(c, row, n_rows, col), codegen


@intrinsic
def _fma_tile(typingctx, acc, a, rows, k0, n_steps, b, b_row, b_col):
    """acc[r, :] += sum over p < n_steps of a[rows[r], k0 + p] * b[b_row + p, b_col:b_col+NR], r < MR:
    the k loop of one register tile, written as explicit vector code (LLVM IR).

    acc: pointer to MR x NR numbers (C order), in the caller's stack frame (``_stack_pointer``).
    a: (M, K) with any strides; rows: 8 row indices of a, the first MR used.
    b: (K', N') with contiguous rows, NR numbers readable from column b_col on.

    The MR x NR accumulators are MR * NR / W vectors of W numbers (W = VECTOR_BYTES / itemsize),
    carried from one step of k to the next as loop variables (LLVM ``phi`` nodes), so they stay in
    registers for the whole loop. Per step p:
    - NR / W vector loads of the row p of b (unaligned: ``load <8 x float>, align 4`` on AVX2);
    - for each of the MR rows, one number of a, splat to all W lanes (``vbroadcastss``), and NR / W
      fused multiply-adds into that row's accumulators (``llvm.fmuladd``: one FMA instruction on
      CPUs that have it, a multiply and an add elsewhere).
    When the rows of a are contiguous, the main loop does K_UNROLL steps per turn and a second loop
    the last few one by one; other strides go one step per turn. The loop is a function of its own
    (``_fma_tile_loop``), not inlined, so that its pointers get the general registers too.
    Written as scalar loops instead, the same tile relies on LLVM's vectorizers, which load all MR
    broadcasts before the FMAs: with 6 x 16 on AVX2 that needs 12 + 2 + 6 = 20 of the 16 ymm
    registers, and four accumulators go to the stack and back on every step.
    """
    if not all(isinstance(t, types.Integer) for t in (k0, n_steps, b_row, b_col)):
        return None
    dtype = a.dtype

    def codegen(context, builder, signature, args):
        acc_ptr, a_value, rows_value = args[:3]
        k0_, n_, b_row_, b_col_ = (context.cast(builder, v, t, types.intp)
                                   for v, t in zip(args[3:5] + args[6:8], signature.args[3:5] + signature.args[6:8]))
        intp = context.get_value_type(types.intp)
        number = context.get_data_type(dtype)
        size = context.get_abi_sizeof(number)
        byte_ptr = ir.IntType(8).as_pointer()
        a_array = context.make_array(signature.args[1])(context, builder, a_value)
        b_array = context.make_array(signature.args[5])(context, builder, args[5])
        a_row_stride, a_col_stride = cgutils.unpack_tuple(builder, a_array.strides, 2)
        b_row_stride = cgutils.unpack_tuple(builder, b_array.strides, 2)[0]
        a_base, b_base = builder.bitcast(a_array.data, byte_ptr), builder.bitcast(b_array.data, byte_ptr)
        rows = cgutils.unpack_tuple(builder, rows_value, len(signature.args[2]))[:MR]
        # pointers to a[rows[r], k0] and to b[b_row, b_col]
        a_k0 = builder.mul(k0_, a_col_stride)
        a_rows = [builder.gep(a_base, [builder.add(builder.mul(row, a_row_stride), a_k0)]) for row in rows]
        b_start = builder.gep(b_base, [builder.add(builder.mul(b_row_, b_row_stride), ir.Constant(intp, 0))])
        b_start = builder.gep(b_start, [builder.mul(b_col_, ir.Constant(intp, size))])
        # the loop lives in a function of its own, which LLVM may not inline: there it has all the
        # general registers for its pointers, whatever the caller keeps in them
        loop = _fma_tile_loop(builder.module, number, size, intp)
        builder.call(loop, [acc_ptr, *a_rows, a_col_stride, b_start, b_row_stride, n_])
        return context.get_dummy_value()

    return types.void(acc, a, rows, k0, n_steps, b, b_row, b_col), codegen


def _fma_tile_loop(module, number, size, intp):
    """The LLVM function that runs the k loop of ``_fma_tile`` (declared once per module):
    void (number *acc, i8 *a_row_0, ..., i8 *a_row_MR-1, intp a_col_stride, i8 *b, intp b_row_stride,
    intp n_steps); byte pointers and strides in bytes."""
    lanes = max(1, min(NR, VECTOR_BYTES // size))  # numbers per register
    while NR % lanes:
        lanes //= 2
    n_vectors = NR // lanes  # vectors per row of the tile
    name = f"minigrad_fma_tile_{MR}x{NR}_f{8 * size}_v{lanes}_u{K_UNROLL}"
    if name in module.globals:
        return module.globals[name]
    byte_ptr = ir.IntType(8).as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [number.as_pointer(), *[byte_ptr] * MR, intp,
                                                                   byte_ptr, intp, intp]), name)
    function.linkage = "internal"
    function.attributes.add("noinline")
    acc_ptr, *a_rows = function.args[:1 + MR]
    a_col_stride, b_base, b_row_stride, n_steps = function.args[1 + MR:]
    builder = ir.IRBuilder(function.append_basic_block("entry"))

    vector = ir.VectorType(number, lanes)
    fmuladd = cgutils.get_or_insert_function(module, ir.FunctionType(vector, [vector] * 3),
                                             f"llvm.fmuladd.v{lanes}f{8 * size}")
    splat_mask = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)

    def const(n):
        return ir.Constant(intp, n)

    def load(base, offset, type_):  # *(type_ *)(base + offset bytes), aligned to one number
        return builder.load(builder.bitcast(builder.gep(base, [offset]), type_.as_pointer()), align=size)

    acc_vectors = [builder.bitcast(builder.gep(acc_ptr, [const(r * NR + v * lanes)]), vector.as_pointer())
                   for r in range(MR) for v in range(n_vectors)]

    def k_loop(accs, left_start, a_offset, b_offset, a_col_stride, unroll):
        """while at least `unroll` steps are left: `unroll` steps of k. The accumulators, the steps
        left and the byte offsets of the next numbers of a (from each row's start) and of b are
        loop variables (phi). Returns their values after it.
        (The steps left count down to a constant: comparing a count up with n_steps would hold
        n_steps in one more general register, and 6 rows of a take most of them already.)"""
        entry = builder.basic_block
        header = builder.append_basic_block(f"k_by_{unroll}")
        body = builder.append_basic_block(f"k_by_{unroll}.body")
        done = builder.append_basic_block(f"k_by_{unroll}.done")
        builder.branch(header)
        builder.position_at_end(header)
        start = [left_start, a_offset, b_offset]
        carried = [builder.phi(intp) for _ in start] + [builder.phi(vector) for _ in accs]
        for phi, value in zip(carried, start + accs):
            phi.add_incoming(value, entry)
        left, a_at, b_at, acc_phis = carried[0], carried[1], carried[2], carried[3:]
        builder.cbranch(builder.icmp_signed(">=", left, const(unroll)), body, done)
        builder.position_at_end(body)
        new = list(acc_phis)
        for u in range(unroll):
            b_step = builder.add(b_at, builder.mul(const(u), b_row_stride))
            b_vectors = [load(b_base, builder.add(b_step, const(v * lanes * size)), vector) for v in range(n_vectors)]
            a_step = builder.add(a_at, builder.mul(const(u), a_col_stride))
            for r in range(MR):
                a_number = load(a_rows[r], a_step, number)
                one = builder.insert_element(ir.Constant(vector, ir.Undefined), a_number, ir.Constant(ir.IntType(32), 0))
                splat = builder.shuffle_vector(one, ir.Constant(vector, ir.Undefined), splat_mask)
                for v in range(n_vectors):
                    i = r * n_vectors + v
                    new[i] = builder.call(fmuladd, [splat, b_vectors[v], new[i]])
        following = ([builder.sub(left, const(unroll)), builder.add(a_at, builder.mul(const(unroll), a_col_stride)),
                      builder.add(b_at, builder.mul(const(unroll), b_row_stride))] + new)
        for phi, value in zip(carried, following):
            phi.add_incoming(value, builder.basic_block)
        builder.branch(header)
        builder.position_at_end(done)
        return acc_phis, left, a_at, b_at

    def sweep(a_col_stride, unroll):  # all n_steps of k: `unroll` at a time, then one by one
        accs = [builder.load(ptr, align=size) for ptr in acc_vectors]
        accs, left, a_at, b_at = k_loop(accs, n_steps, const(0), const(0), a_col_stride, unroll)
        accs = k_loop(accs, left, a_at, b_at, a_col_stride, 1)[0]
        for ptr, value in zip(acc_vectors, accs):
            builder.store(value, ptr, align=size)

    # Rows of a contiguous (a row-major, or a packed block): the numbers of a for the next steps
    # sit at constant offsets from the MR row pointers, so unroll k. Other strides: one step at a time.
    with builder.if_else(builder.icmp_signed("==", a_col_stride, const(size))) as (contiguous, strided):
        with contiguous:
            sweep(const(size), K_UNROLL)
        with strided:
            sweep(a_col_stride, 1)
    builder.ret_void()
    return function


def _number_size(array):
    """Bytes per number of `array`; in compiled code, a constant known at compile time."""
    return array.itemsize


@overload(_number_size)
def _number_size_numba(array):
    size = as_dtype(array.dtype).itemsize  # read from the array's type, when numba compiles
    return lambda array: size


# --------------------------------------------------------------------------------------------
# The register tile
# --------------------------------------------------------------------------------------------


@jit(cache=CACHE)
def _tile_kernel(a, i0, n_tiles, last_row, k0, k1, b, bk0, bj0, c, ci, cj, accumulate, bias, bias_j0):
    """c[ci:ci+MR*n_tiles, cj:cj+NR] (+)= a[i0:i0+MR*n_tiles, k0:k1] @ b[bk0:bk0+k1-k0, bj0:bj0+NR],
    as n_tiles register tiles of MR x NR, one below the other.

    a: (M, K) strided; rows past ``last_row`` read ``last_row`` instead (their results land in
       rows of ``c`` that the caller throws away), so an edge tile never reads out of bounds.
    b: (rows, cols) with contiguous rows: a packed strip, or b itself.
    c: (rows, cols) C-contiguous, with room for all the tiles.
    accumulate: add to the tiles already in ``c``. Otherwise overwrite them, starting the sums
       from bias[bias_j0:bias_j0+NR] in every row (c = a @ b + bias in the same pass), or from 0
       if bias is empty.

    The rows are written out one by one, up to MAX_MR = 8; ``MR`` (a constant when numba compiles
    this) says how many of them the compiled kernel keeps: LLVM removes the lines under a false
    ``if MR > r``. The NR columns are a loop with a constant trip count, which LLVM unrolls. So the
    MR x NR ``acc`` stays in vector registers, and each line ``acc[r, j] += a_r * b_pj`` becomes
    NR / W fused multiply-adds (W floats per register).
    (A loop over the rows would read more simply, but LLVM may then vectorise across the rows,
    with gathers and scatters, instead of along them.)
    With VECTOR_TILE, the loop over k is ``_fma_tile`` instead: the same sums, as explicit vector code.
    """
    _never_inline()
    if b.strides[1] != _number_size(b):  # from here on, the compiler knows b's rows are contiguous
        raise ValueError("_tile_kernel: the rows of b must be contiguous")
    acc_ptr = _stack_pointer(c, TILE_SIZE)
    acc = numba.carray(acc_ptr, (MR, NR))
    _prefetch_rows(c, ci, min(MR, c.shape[0] - ci), cj)
    for t in range(n_tiles):
        i = i0 + t * MR  # first row of this tile in a, and in c
        ic = ci + t * MR
        if t + 1 < n_tiles:  # the next tile's lines of c come in while this tile runs
            _prefetch_rows(c, ic + MR, min(MR, c.shape[0] - ic - MR), cj)
        row0 = np.uintp(i)
        row1 = np.uintp(min(i + 1, last_row))
        row2 = np.uintp(min(i + 2, last_row))
        row3 = np.uintp(min(i + 3, last_row))
        row4 = np.uintp(min(i + 4, last_row))
        row5 = np.uintp(min(i + 5, last_row))
        row6 = np.uintp(min(i + 6, last_row))
        row7 = np.uintp(min(i + 7, last_row))
        if accumulate:
            for r in range(MR):
                _copy_row(c, ic + r, cj, acc, r, 0)
        elif bias.shape[0] > 0:
            for r in range(MR):
                for j in range(NR):
                    acc[r, j] = bias[np.uintp(bias_j0 + j)]
        else:
            for r in range(MR):
                for j in range(NR):
                    acc[r, j] = 0
        if VECTOR_TILE:
            _fma_tile(acc_ptr, a, (row0, row1, row2, row3, row4, row5, row6, row7), k0, k1 - k0, b, bk0, bj0)
        else:
            for p in range(k1 - k0):
                # one number from each of the MR rows of a, broadcast against NR numbers of b
                col = np.uintp(k0 + p)
                a0 = a[row0, col]
                a1 = a[row1, col] if MR > 1 else a0
                a2 = a[row2, col] if MR > 2 else a0
                a3 = a[row3, col] if MR > 3 else a0
                a4 = a[row4, col] if MR > 4 else a0
                a5 = a[row5, col] if MR > 5 else a0
                a6 = a[row6, col] if MR > 6 else a0
                a7 = a[row7, col] if MR > 7 else a0
                b_row = np.uintp(bk0 + p)
                for j in range(NR):
                    b_pj = b[b_row, np.uintp(bj0 + j)]
                    acc[0, j] += a0 * b_pj
                    if MR > 1:
                        acc[1, j] += a1 * b_pj
                    if MR > 2:
                        acc[2, j] += a2 * b_pj
                    if MR > 3:
                        acc[3, j] += a3 * b_pj
                    if MR > 4:
                        acc[4, j] += a4 * b_pj
                    if MR > 5:
                        acc[5, j] += a5 * b_pj
                    if MR > 6:
                        acc[6, j] += a6 * b_pj
                    if MR > 7:
                        acc[7, j] += a7 * b_pj
        for r in range(MR):
            _copy_row(acc, r, 0, c, ic + r, cj)


@jit(cache=CACHE)
def _copy_row(src, i, j0, dst, di, dj0):
    """dst[di, dj0:dj0+NR] = src[i, j0:j0+NR], both rows contiguous.

    One row at a time: a loop that stored to MR rows at once would need run-time checks that the
    rows do not overlap, and LLVM would not vectorise it.
    """
    i, di = np.uintp(i), np.uintp(di)
    for j in range(NR):
        dst[di, np.uintp(dj0 + j)] = src[i, np.uintp(j0 + j)]


# --------------------------------------------------------------------------------------------
# Packing and the loops around the tile
# --------------------------------------------------------------------------------------------


@jit(cache=CACHE, inline=INLINE)
def _pack_strip(b, k0, k1, j0, strip):
    """strip[q, j] = b[k0 + q, j0 + j] for q < k1 - k0 and j < NR, zero past the last column.

    b: (K, N) strided. strip: (KC, NR) contiguous scratch.
    Both branches run the same copy, row by row of the strip (which stays in L1); the first is
    compiled knowing that b's rows are contiguous. (For a transposed b, reading down its columns
    instead would write the strip column by column, one cache line per number.)
    """
    n_steps = k1 - k0
    width = min(NR, b.shape[1] - j0)
    for q in range(n_steps):  # zero padding: the tile computes all NR columns
        for j in range(width, NR):
            strip[q, j] = 0
    if b.strides[1] == _number_size(b):  # rows of b are contiguous: b is row-major
        for q in range(n_steps):
            row = np.uintp(k0 + q)
            for j in range(width):
                strip[q, j] = b[row, np.uintp(j0 + j)]
    else:  # any other strides (a transposed view too): the same copy, with strided loads
        for q in range(n_steps):
            row = np.uintp(k0 + q)
            for j in range(width):
                strip[q, j] = b[row, np.uintp(j0 + j)]


@jit(cache=CACHE, inline=INLINE)
def _pack_rows(a, i_lo, i_hi, k0, k1, packed):
    """packed[i - i_lo, q] = a[i, k0 + q] for the rows [i_lo, i_hi): a contiguous copy of a block.

    a: (M, K) strided. packed: (>= i_hi - i_lo, >= k1 - k0) C-contiguous scratch.
    """
    if a.strides[1] == _number_size(a):  # rows of a are contiguous
        for i in range(i_hi - i_lo):
            row = np.uintp(i_lo + i)
            for q in range(k1 - k0):
                packed[i, q] = a[row, np.uintp(k0 + q)]
    else:  # read a column by column (for a transposed view, those are contiguous)
        for q in range(k1 - k0):
            col = np.uintp(k0 + q)
            for i in range(i_hi - i_lo):
                packed[i, q] = a[np.uintp(i_lo + i), col]


@jit(cache=CACHE, inline=INLINE)
def _copy_block(src, si, sj, dst, di, dj, height, width):
    """dst[di:di+height, dj:dj+width] = src[si:si+height, sj:sj+width], for C-contiguous src and dst
    (unsigned indices: no check for negative ones, and LLVM moves a SIMD register at a time)."""
    for i in range(height):
        src_row, dst_row = np.uintp(si + i), np.uintp(di + i)
        for j in range(width):
            dst[dst_row, np.uintp(dj + j)] = src[src_row, np.uintp(sj + j)]


@jit(cache=CACHE, inline=INLINE)
def _rows_per_pass(k_block):
    """Row blocks of a (MR rows each) that one pass over the strips reads: MC x KC numbers (128 KB,
    which stay in L2), so MC rows at full blocks of k and more when k is short."""
    return max(MC // MR, MC * KC // (k_block * MR))


@jit(cache=CACHE)
def matmul_block(a, b, c, bias, strip_lo, strip_hi, block_lo, block_hi, packed_a, packed_b, edge):
    """c[rows, cols] = a[rows] @ b[:, cols] (+ bias[cols]) for the column strips [strip_lo, strip_hi)
    (NR columns each) and the row blocks [block_lo, block_hi) (MR rows each), in BLIS's order:
    for each block of k, the strips' pieces of b are packed once, side by side (a panel of b), and
    then every pass of rows (``_rows_per_pass``) runs the tiles of every strip over them.

    a: (M, K) strided, b: (K, N) strided, c: (M, N) C-contiguous; bias: empty (no bias) or (N,)
    padded with zeros to a whole number of strips.
    Scratch buffers: packed_a (rows of one pass, longest k block + padding) to copy the rows of a
    into, or (0, ...) to read a in place; packed_b (>= strip_hi - strip_lo, KC, NR); edge (EDGE_ROWS, NR),
    or (MR, NR) at least.
    """
    _never_inline()
    n_rows, n_inner = a.shape
    n_cols = b.shape[1]
    n_k_blocks = (n_inner + KC - 1) // KC
    k_block = (n_inner + n_k_blocks - 1) // n_k_blocks  # the longest block of k
    # b in place: needs contiguous rows, and a piece of a strip small enough to stay in L1 unpacked
    b_in_place = b.strides[1] == _number_size(b) and k_block * abs(b.strides[0]) <= DIRECT_B_BYTES
    rows_per_pass = _rows_per_pass(k_block)
    i_end = min(block_hi * MR, n_rows)
    edge_tiles = edge.shape[0] // MR  # tiles that the edge buffer holds, one below the other
    zero = np.intp(0)  # (a plain 0 as argument would make numba compile again)
    for kb in range(n_k_blocks):
        k0 = kb * n_inner // n_k_blocks  # equal blocks rather than full ones plus a short remainder
        k1 = (kb + 1) * n_inner // n_k_blocks
        accumulate = kb > 0
        for s in range(strip_lo, strip_hi):
            if not (b_in_place and n_cols - s * NR >= NR):
                _pack_strip(b, k0, k1, s * NR, packed_b[s - strip_lo])
        for pass_lo in range(block_lo, block_hi, rows_per_pass):
            pass_hi = min(pass_lo + rows_per_pass, block_hi)
            i_lo, i_hi = pass_lo * MR, min(pass_hi * MR, i_end)
            if packed_a.shape[0] >= i_hi - i_lo:  # copy the block of a that every strip below reads
                _pack_rows(a, i_lo, i_hi, k0, k1, packed_a)
                a_src, a_row0, ak0, ak1, a_last = packed_a, i_lo, zero, k1 - k0, i_hi - 1 - i_lo
            else:
                a_src, a_row0, ak0, ak1, a_last = a, zero, k0, k1, n_rows - 1
            for s in range(strip_lo, strip_hi):
                j0 = s * NR
                width = min(NR, n_cols - j0)
                if b_in_place and width == NR:
                    b_src, bk0, bj0 = b, k0, j0
                else:
                    b_src, bk0, bj0 = packed_b[s - strip_lo], 0, 0
                # the piece of b stays in L1 while the tiles run down the pass's rows: first all the
                # tiles that fit in c, in one call, then those that stick out of c (past its last
                # column or row), computed in `edge`, as many per call as it holds, and copied out
                full_hi = min(pass_hi, n_rows // MR) if width == NR else pass_lo
                if full_hi > pass_lo:
                    i0 = pass_lo * MR
                    _tile_kernel(a_src, i0 - a_row0, full_hi - pass_lo, a_last, ak0, ak1, b_src, bk0, bj0, c, i0, j0,
                                 accumulate, bias, j0)
                for edge_lo in range(max(full_hi, pass_lo), pass_hi, edge_tiles):
                    n_tiles = min(edge_tiles, pass_hi - edge_lo)
                    i0 = edge_lo * MR
                    height = min(n_tiles * MR, n_rows - i0)
                    if accumulate:
                        _copy_block(c, i0, j0, edge, 0, 0, height, width)
                    _tile_kernel(a_src, i0 - a_row0, np.intp(n_tiles), a_last, ak0, ak1, b_src, bk0, bj0, edge, zero,
                                 zero, accumulate, bias, j0)
                    _copy_block(edge, 0, 0, c, i0, j0, height, width)


# --------------------------------------------------------------------------------------------
# Products inside other compiled kernels (attention.py, conv2d.py, rnn.py), on the calling thread,
# through matmul_block's address (call_block, block_product), which keeps a copy of matmul_block out
# of the kernel's compiled code
# --------------------------------------------------------------------------------------------


@intrinsic
def read_only(typingctx, array, as_strided):
    """The same array, typed as read-only, and as strided (numba layout 'A') if `as_strided` is True.

    These are the types ``_run_tasks`` hands to ``matmul_block`` (strided operands, a C-contiguous
    bias), so a kernel that multiplies inside calls the very same compiled code instead of
    compiling it again for C-contiguous or transposed operands. (All array types share one memory
    layout in numba; only the type the compiler sees changes.)
    """
    if not isinstance(array, types.Array) or not isinstance(as_strided, types.BooleanLiteral):
        return None
    result = array.copy(layout="A" if as_strided.literal_value else array.layout, readonly=True)

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, result, args[0])

    return result(array, as_strided), codegen


@jit(cache=CACHE, inline=INLINE)
def strided(array):
    """array as the read-only strided operand type of ``matmul_block``."""
    return read_only(array, True)


@jit(cache=CACHE, inline=INLINE)
def block_scratch(dtype_of, n_cols):
    """Buffers for matmul_block, for products of at most n_cols columns: a read in place (0 rows),
    the packed strips of b, one edge tile; and an empty bias. Returns (packed_a, packed_b, edge, no_bias)."""
    dtype = dtype_of.dtype
    return (np.empty((0, 1), dtype=dtype), np.empty(((n_cols + NR - 1) // NR, KC, NR), dtype=dtype),
            np.empty((EDGE_ROWS, NR), dtype=dtype), read_only(np.empty(0, dtype=dtype), False))


def block_signature(dtype):
    """The argument types of the one version of matmul_block per dtype: a and b read-only and
    strided, c C-contiguous, a read-only bias, four integers, the three scratch buffers (the types
    ``_run_tasks`` and ``block_scratch`` give it)."""
    operand, out = types.Array(dtype, 2, "A", readonly=True), types.Array(dtype, 2, "C")
    return (operand, operand, out, types.Array(dtype, 1, "C", readonly=True), *[types.intp] * 4,
            out, types.Array(dtype, 3, "C"), out)


@intrinsic
def call_block(typingctx, address, a, b, c, bias, strip_lo, strip_hi, block_lo, block_hi, packed_a, packed_b, edge):
    """matmul_block(a, b, c, ..., edge) through ``address``, where its machine code is
    (``block_address``); an exception it raises is passed on, as from a call by name.

    A kernel that calls matmul_block by name holds a copy of it: numba compiles matmul_block into
    that kernel's code, and LLVM optimizes it there once more, seconds of a first start per kernel.
    A call through the address compiles to one indirect call, as numba calls one compiled function
    from another (``_entries.call_native``), and the kernel compiles without matmul_block. The
    arguments must have exactly the types of ``block_signature``, or the kernel does not compile.
    """
    arg_types = (a, b, c, bias, strip_lo, strip_hi, block_lo, block_hi, packed_a, packed_b, edge)
    if not isinstance(a, types.Array) or arg_types != block_signature(a.dtype):
        return None

    def codegen(context, builder, signature, args):
        status = call_native(context, builder, args[0], arg_types, list(args[1:]))
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return context.get_dummy_value()

    return types.none(address, *arg_types), codegen


_block_addresses = {}  # dtype -> the address of matmul_block's machine code for it


def block_address(dtype):
    """The address of matmul_block's machine code for ``dtype`` (compiled, or loaded from the
    cache, on first use), for ``call_block``."""
    address = _block_addresses.get(dtype)
    if address is None:
        signature = block_signature(numba.from_dtype(np.dtype(dtype)))
        compiled = matmul_block.overloads.get(signature)
        if compiled is None:
            matmul_block.compile(signature)
            compiled = matmul_block.overloads[signature]
        address = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
        _block_addresses[dtype] = _block_addresses[np.dtype(dtype)] = address  # (np.float32 and its dtype hash apart)
    return address


@jit(cache=CACHE, inline=INLINE)
def block_product(a, b, c, scratch, matmul_at):
    """c = a @ b with matmul_block, all of it: a (M, K) and b (K, N) strided, c (M, N) C-contiguous,
    scratch from ``block_scratch`` (for at least N columns), matmul_at from ``block_address``."""
    packed_a, packed_b, edge, no_bias = scratch
    n_strips, n_blocks = np.intp((c.shape[1] + NR - 1) // NR), np.intp((c.shape[0] + MR - 1) // MR)
    call_block(matmul_at, a, b, c, no_bias, np.intp(0), n_strips, np.intp(0), n_blocks, packed_a, packed_b, edge)


@jit(cache=CACHE, inline=INLINE)
def _chunk(n_items, n_chunks, k):
    """The k-th of n_chunks nearly equal contiguous ranges of range(n_items), as (lo, hi)."""
    return k * n_items // n_chunks, (k + 1) * n_items // n_chunks


def _signature(dtype):
    """The one signature ``_run_tasks`` is compiled for, per dtype: inputs as read-only 3-D views
    with any strides ('A' layout, which C-contiguous and writable arrays convert to), output
    C-contiguous, a read-only 1-D bias, matmul_block's address (``block_address``), then five integers."""
    return types.void(
        types.Array(dtype, 3, "A", readonly=True),
        types.Array(dtype, 3, "A", readonly=True),
        types.Array(dtype, 3, "C"),
        types.Array(dtype, 1, "C", readonly=True),
        types.int64,
        *[types.intp] * 5,
    )


@typed_jit(_signature, cache=CACHE)
def _run_tasks(a, b, c, bias, matmul_at, n_batch_chunks, n_col_chunks, n_row_chunks, first, stop):
    """Tasks first <= task < stop. A task is a range of batch slices x a range of column strips x a
    range of rows; the n_batch_chunks * n_col_chunks * n_row_chunks tasks tile (B, M, N) in that
    order. (a: (B, M, K), b: (B, K, N), c: (B, M, N), bias: empty or (N,) padded to whole strips;
    matmul_at: ``block_address``.)"""
    _never_inline()
    n_rows, n_inner, n_cols = a.shape[1], a.shape[2], b.shape[2]
    n_k_blocks = (n_inner + KC - 1) // KC
    k_block = (n_inner + n_k_blocks - 1) // n_k_blocks  # the longest block of k
    rows_per_pass = _rows_per_pass(k_block)
    n_strips = (n_cols + NR - 1) // NR
    packed_b = np.empty((min(n_strips, PANEL_STRIPS), KC, NR), dtype=c.dtype)  # scratch buffers, once per call
    edge = np.empty((EDGE_ROWS, NR), dtype=c.dtype)  # tiles that stick out of c are computed here
    for task in range(first, stop):
        batch_chunk, rest = divmod(task, n_col_chunks * n_row_chunks)
        col_chunk, row_chunk = divmod(rest, n_row_chunks)
        batch_lo, batch_hi = _chunk(c.shape[0], n_batch_chunks, batch_chunk)
        strip_lo, strip_hi = _chunk(n_strips, n_col_chunks, col_chunk)
        block_lo, block_hi = _chunk((n_rows + MR - 1) // MR, n_row_chunks, row_chunk)
        # Blocks of a are copied into packed_a when a is large: a contiguous block stays in L2 while
        # the strips read it, where rows of a far apart might not (rows 4 KB apart, for example, all
        # compete for the same few cache sets). Its rows are padded by 16 numbers for the same reason.
        block_rows = min(min(block_hi - block_lo, rows_per_pass) * MR, n_rows - block_lo * MR)
        pack_a = strip_hi - strip_lo >= PACK_A_STRIPS and block_rows * k_block * _number_size(a) >= PACK_A_BYTES
        packed_a = np.empty((block_rows if pack_a else 0, k_block + 16), dtype=c.dtype)
        for i in range(batch_lo, batch_hi):
            for panel_lo in range(strip_lo, strip_hi, PANEL_STRIPS):  # at most KC x 4096 numbers of b packed
                panel_hi = min(panel_lo + PANEL_STRIPS, strip_hi)
                call_block(matmul_at, a[i], b[i], c[i], bias, panel_lo, panel_hi, block_lo, block_hi, packed_a, packed_b,
                           edge)


def _pair_signature(dtype):
    """The one signature of ``_product_pair`` per dtype: operands read-only 2-D with any strides,
    outputs C-contiguous, then matmul_block's address and the range of items."""
    operand, out = types.Array(dtype, 2, "A", readonly=True), types.Array(dtype, 2, "C")
    rows, sums = types.Array(dtype, 2, "C", readonly=True), types.Array(dtype, 1, "C")
    return types.void(operand, operand, out, operand, operand, out, rows, sums, types.int64, types.intp, types.intp)


@typed_jit(_pair_signature, cache=CACHE)
def _product_pair(a1, b1, c1, a2, b2, c2, rows, sums, matmul_at, first, stop):
    """Items first <= item < stop of two: item 0 is c1 = a1 @ b1, item 1 is c2 = a2 @ b2 and then
    sums = the sum of the rows of ``rows`` (a Linear layer's bias gradient, from the g its products
    have just read; none if ``sums`` is empty). Each item whole, on the thread that takes it.
    (matmul_at: ``block_address``.)"""
    for item in range(first, stop):
        if item == 0:
            block_product(a1, b1, c1, block_scratch(c1, c1.shape[1]), matmul_at)
        else:
            block_product(a2, b2, c2, block_scratch(c2, c2.shape[1]), matmul_at)
            if sums.shape[0] > 0:
                for c in range(sums.shape[0]):
                    sums[c] = 0
                for r in range(rows.shape[0]):  # row after row, as numpy's rows.sum(axis=0): the same bits
                    for c in range(sums.shape[0]):
                        sums[c] += rows[r, c]


# --------------------------------------------------------------------------------------------
# The Python entry point: check, reshape, split the work
# --------------------------------------------------------------------------------------------


_NO_BIAS = {np.float32: np.zeros(0, np.float32), np.float64: np.zeros(0, np.float64)}


def _as_3d(x, n_batch):
    """x (*batch, R, C) as a (n_batch, R, C) view, or None if its batch axes cannot be merged
    into one strided axis without copying."""
    if x.ndim == 3:
        return x
    if x.ndim == 2:
        return x[np.newaxis]
    batch_axes = [(n, st) for n, st in zip(x.shape[:-2], x.strides[:-2]) if n != 1]
    for (_, outer_stride), (inner_n, inner_stride) in zip(batch_axes, batch_axes[1:]):
        if outer_stride != inner_n * inner_stride:
            return None
    return x.reshape(n_batch, *x.shape[-2:])  # numpy makes a view when the axes merge like this


def _read_in_place(b, n_inner):
    """Does matmul_block read the full strips of b (B, K, N) where they are (no packing)? Its own test."""
    k_block = -(-n_inner // -(-n_inner // KC))
    return b.strides[2] == b.itemsize and k_block * abs(b.strides[1]) <= DIRECT_B_BYTES


def _split_work(n_batch, n_rows, n_cols, n_threads, n_tasks):
    """How many parts to cut (batch, rows, cols) into, about n_tasks (a multiple of n_threads) of
    equal work: (n_batch_chunks, n_col_chunks, n_row_chunks)."""
    if n_batch % n_threads == 0 or n_batch >= 4 * n_threads:
        return min(n_batch, n_tasks), 1, 1  # whole slices
    # Few slices: cut every slice into n_threads parts. Each part reads all of the operand that
    # is not cut, so cut the larger one: a (M x K) by rows if M > N, else b (K x N) by columns.
    n_strips, n_blocks = -(-n_cols // NR), -(-n_rows // MR)
    if (n_rows > n_cols or n_strips < n_threads) and n_blocks >= n_threads:
        return n_batch, 1, min(n_blocks, n_tasks)
    return n_batch, min(n_tasks, n_strips), 1


def matmul_numba(a, b, bias=None):
    """``a @ b`` (+ ``bias``): float32 with the compiled blocked kernel, float64 with the numpy twin.

    float64 serves gradient checks, on small inputs, where BLAS's float64 product is quick and
    exact; compiling the kernel for float64 as well would add many seconds to the first start.
    Small 2-D float32 products (``BLAS_BELOW``) go to numpy too: the arithmetic there is cheaper
    than the call into compiled code. (``matmul_compiled`` runs the kernel for any shape and either
    dtype.)
    """
    _check("matmul_numba", a, b, bias)
    small = a.ndim == 2 and a.shape[1] > 1 and a.shape[0] * a.shape[1] * b.shape[1] <= BLAS_BELOW
    # With a bias, numpy adds it in a second pass, row by row: the kernel's fused add wins on many rows,
    # unless the product is narrower than a strip of NR columns (the kernel then computes mostly padding).
    small = small and (bias is None or a.shape[0] <= 16 or b.shape[1] < NR)
    if a.dtype == np.float64 or (small and a.itemsize in a.strides and b.itemsize in b.strides):
        return matmul_numpy(a, b, bias)  # (rows or columns at unit stride: layouts BLAS reads in place)
    return _matmul_compiled(a, b, bias)


PAIR_MAX_FLOPS = 512_000_000  # above this, each product is split over the threads as usual: a whole
# product on one thread reads its a in place, and a large a does not stay in that core's L2


def matmul_pair_numba(a1, b1, a2, b2, rows=None):
    """``(a1 @ b1, a2 @ b2, the sum of the rows of rows)`` for 2-D operands of one dtype: a layer's
    two backward products, and its bias gradient if ``rows`` (g) is given (else None).

    When both products are float32, of about equal work, and each worth a thread of its own
    (``SERIAL_FLOPS`` to ``PAIR_MAX_FLOPS``), the two run side by side, one whole product per thread
    (``_product_pair``), and the thread of the second adds up the rows; otherwise one after the other,
    each as ``matmul_numba`` runs it, and numpy adds up the rows. (On a first start, the pair waits
    until the compile-ahead process has compiled it: ``_warm.py``.)
    """
    _check("matmul_pair_numba", a1, b1, None)
    _check("matmul_pair_numba", a2, b2, None)
    if rows is not None and (rows.ndim != 2 or rows.dtype != a1.dtype):
        raise ValueError(f"matmul_pair_numba: rows {rows.shape} {rows.dtype} must be 2-D, of dtype {a1.dtype}")
    flops = sorted(2 * a.shape[0] * a.shape[1] * b.shape[1] for a, b in ((a1, b1), (a2, b2)) if a.ndim == 2)
    side_by_side = (len(flops) == 2 and a1.dtype == a2.dtype == np.float32 and get_num_threads() >= 2
                    and SERIAL_FLOPS <= flops[0] and flops[1] <= min(2 * flops[0], PAIR_MAX_FLOPS)
                    and not _warm.pending(_warm.POOL_LAST))
    if not side_by_side:
        return matmul_numba(a1, b1), matmul_numba(a2, b2), None if rows is None else rows.sum(axis=0)
    c1 = np.empty((a1.shape[0], b1.shape[1]), dtype=a1.dtype)
    c2 = np.empty((a2.shape[0], b2.shape[1]), dtype=a2.dtype)
    asked = rows is not None
    rows = np.ascontiguousarray(rows) if asked else np.empty((0, 0), dtype=a1.dtype)
    sums = np.empty(rows.shape[1], dtype=a1.dtype)
    kernel = _product_pair.compiled.get(a1.dtype)
    if kernel is None:
        with _warm.loading:  # (its first use compiles it, or loads it from the cache: see _warm.py)
            kernel = _product_pair.for_dtype(a1.dtype)
    parallel_for(kernel, 2, a1, b1, c1, a2, b2, c2, rows, sums, block_address(a1.dtype), chunks_per_thread=1)
    return c1, c2, sums if asked else None


def _check(name, a, b, bias):
    if a.dtype != b.dtype or a.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name}: need two float32 or two float64 arrays, got {a.dtype} and {b.dtype}")
    if a.ndim < 2 or a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
        raise ValueError(f"{name}: shapes {a.shape} and {b.shape} do not match")
    if bias is not None and (bias.shape != (b.shape[-1],) or bias.dtype != a.dtype):
        raise ValueError(f"{name}: bias {bias.shape} {bias.dtype} does not fit {b.shape[-1]} columns of {a.dtype}")


def matmul_compiled(a, b, bias=None):
    """``a @ b`` (+ ``bias``) with the compiled blocked kernel.

    a: (*batch, M, K), b: (*batch, K, N) with the same batch shape (strides may be zero) and the
    same dtype, float32 or float64; any layout. bias: None or (N,), added to every row as the sums
    start (no extra pass over the result). Returns a new C-contiguous (*batch, M, N) array.
    """
    _check("matmul_numba", a, b, bias)
    return _matmul_compiled(a, b, bias)


def _matmul_compiled(a, b, bias):
    """matmul_compiled for inputs that passed ``_check``."""
    batch_shape, (n_rows, n_inner), n_cols = a.shape[:-2], a.shape[-2:], b.shape[-1]
    out = np.empty((*batch_shape, n_rows, n_cols), dtype=a.dtype)
    if out.size == 0:
        return out
    if n_inner == 0:
        out[...] = 0 if bias is None else bias
        return out
    if bias is None:
        padded_bias = _NO_BIAS[a.dtype.type]
    elif n_cols % NR == 0 and bias.flags.c_contiguous:
        padded_bias = bias  # whole strips already
    else:  # zeros past the last column: edge tiles read whole strips of NR
        padded_bias = np.zeros(-(-n_cols // NR) * NR, dtype=a.dtype)
        padded_bias[:n_cols] = bias

    n_batch = out.size // (n_rows * n_cols)
    # Batch axes that cannot merge into one stride (heads split from features: q of shape
    # (B, h, T, d_k) viewing a (B, T, h, d_k) array) are copied once: far cheaper than one kernel
    # call per slice.
    a3 = _as_3d(a, n_batch)
    a3 = _as_3d(np.ascontiguousarray(a), n_batch) if a3 is None else a3
    b3 = _as_3d(b, n_batch)
    b3 = _as_3d(np.ascontiguousarray(b), n_batch) if b3 is None else b3
    out3 = out.reshape(n_batch, n_rows, n_cols)
    if n_batch > 1 and b3.strides[0] == 0 and a3.strides[0] == n_rows * a3.strides[1]:
        # b is the same matrix for every slice (a broadcast weight) and the slices of a are
        # evenly spaced rows: one tall 2-D product packs b once instead of n_batch times.
        a3 = a3.reshape(1, n_batch * n_rows, n_inner)  # a view, given the strides just checked
        b3, out3 = b3[:1], out.reshape(1, n_batch * n_rows, n_cols)

    kernel = _run_tasks.for_dtype(a.dtype)
    n_threads = get_num_threads()
    if 2 * out.size * n_inner < SERIAL_FLOPS or n_threads == 1:  # all of it as one task, on this thread
        kernel(a3, b3, out3, padded_bias, block_address(a.dtype), 1, 1, 1, 0, 1)
    else:
        flops = 2 * out.size * n_inner
        n_tasks = n_threads * max(1, min(TASKS_PER_THREAD, flops // (n_threads * TASK_FLOPS)))
        split = _split_work(out3.shape[0], out3.shape[1], n_cols, n_threads, n_tasks)
        if split[2] > n_threads and not _read_in_place(b3, n_inner):
            # tasks that cut the rows of one product each pack all of b for themselves: one per thread
            split = (split[0], 1, n_threads)
        parallel_for(kernel, split[0] * split[1] * split[2], a3, b3, out3, padded_bias, block_address(a.dtype), *split)
    return out
