"""How a worker thread calls a compiled kernel without Python: a C entry point per kernel.

A kernel is called from Python as ``kernel(*args, start, stop)``: numba reads each Python argument
(an array, a float, ...) and calls the machine code. A worker thread that polls in compiled code
(``_spin.serve``) cannot do that without taking the GIL. So each kernel that runs on the pool gets
a small C function, its *entry*, with one fixed signature whatever the kernel's arguments:

    void entry(int64 block, int64 start, int64 stop)

``block`` is the address of an int64 array that holds the kernel's arguments, written by ``pack``:
nine numbers per argument,

    array:        data address, shape (4 slots), strides in bytes (4 slots)
    float:        its 64 bits (a float32 argument is widened to float64 and back)
    int, bool:    the value

and the entry unpacks them (``_unpack``) into arguments of exactly the numba types the kernel was
compiled for, then calls it. ``pack`` returns a code of the argument types (a CRC of their numba
names): with the kernel it picks the entry, so arguments are never unpacked as the wrong types.

An entry is compiled once per kernel and argument types, the first time that kernel runs on the
pool, and cached by numba like every kernel (a tenth of a second to compile, a few milliseconds to
load). A kernel that is not a numba function, or takes an argument of another kind, has no entry:
the pool runs it from Python (``_parallel.py``).
"""
import types as pytypes
import zlib

from ._jit import jit  # first: it sets LLVM options before numba is imported

import numba  # noqa: E402
from llvmlite import ir  # noqa: E402
from numba import types  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.core.dispatcher import Dispatcher  # noqa: E402
from numba.extending import intrinsic  # noqa: E402
from numba.np.arrayobj import populate_array  # noqa: E402

SLOTS = 9  # numbers per argument
MAX_NDIM = 4
MAX_ARGS = 16
BLOCK_SIZE = SLOTS * MAX_ARGS
_I64 = ir.IntType(64)


def _supported(ty):
    if isinstance(ty, types.Array):
        return 1 <= ty.ndim <= MAX_NDIM and isinstance(ty.dtype, (types.Float, types.Integer, types.Boolean))
    return isinstance(ty, (types.Float, types.Integer, types.Boolean))


def type_code(arg_types):
    """The code ``pack`` returns for arguments of these numba types."""
    return zlib.crc32(str(types.Tuple(tuple(arg_types))).encode())


def _slot(builder, block, index):
    base = builder.inttoptr(block, _I64.as_pointer())
    return builder.gep(base, [ir.Constant(_I64, index)])


@intrinsic
def _pack(typingctx, block, args):
    """Write the arguments (a tuple) into the block at address ``block``; -> their type code."""
    if not (isinstance(args, types.BaseTuple) and len(args) <= MAX_ARGS and all(map(_supported, args))):
        return None
    code = type_code(args.types)

    def codegen(context, builder, signature, llargs):
        block_address, values = llargs
        for i, ty in enumerate(args.types):
            value = builder.extract_value(values, i)

            def put(k, number, i=i):
                builder.store(number, _slot(builder, block_address, i * SLOTS + k))

            if isinstance(ty, types.Array):
                array = context.make_array(ty)(context, builder, value)
                put(0, builder.ptrtoint(array.data, _I64))
                shape = cgutils.unpack_tuple(builder, array.shape)
                strides = cgutils.unpack_tuple(builder, array.strides)
                for d in range(ty.ndim):
                    put(1 + d, shape[d])
                    put(1 + MAX_NDIM + d, strides[d])
            elif isinstance(ty, types.Float):
                wide = value if ty.bitwidth == 64 else builder.fpext(value, ir.DoubleType())
                put(0, builder.bitcast(wide, _I64))
            else:
                put(0, context.cast(builder, value, ty, types.int64))
        return context.get_constant(types.int64, code)

    return types.int64(types.int64, args), codegen


@intrinsic
def _unpack(typingctx, block, arg_types):
    """The arguments in the block at address ``block``, as a tuple of the types ``arg_types``."""
    tuple_type = arg_types.instance_type

    def codegen(context, builder, signature, llargs):
        values = []
        for i, ty in enumerate(tuple_type.types):
            def get(k, i=i):
                return builder.load(_slot(builder, llargs[0], i * SLOTS + k))

            if isinstance(ty, types.Array):
                item = context.get_data_type(ty.dtype)
                array = context.make_array(ty)(context, builder)
                populate_array(array, data=builder.inttoptr(get(0), item.as_pointer()),
                               shape=cgutils.pack_array(builder, [get(1 + d) for d in range(ty.ndim)]),
                               strides=cgutils.pack_array(builder, [get(1 + MAX_NDIM + d) for d in range(ty.ndim)]),
                               itemsize=context.get_constant(types.intp, context.get_abi_sizeof(item)),
                               meminfo=None)  # (the caller's array owns the memory)
                values.append(array._getvalue())
            elif isinstance(ty, types.Float):
                wide = builder.bitcast(get(0), ir.DoubleType())
                values.append(wide if ty.bitwidth == 64 else builder.fptrunc(wide, ir.FloatType()))
            else:
                values.append(context.cast(builder, get(0), types.int64, ty))
        return context.make_tuple(builder, tuple_type, values)

    return tuple_type(types.int64, arg_types), codegen


@jit
def pack(block, args):
    """Write ``args`` into the int64 block at address ``block``; -> the code of their types."""
    return _pack(block, args)


def _entry(block, start, stop):
    # The body of every entry; KERNEL and ARG_TYPES are set per entry (see compile_entry).
    KERNEL(*_unpack(block, ARG_TYPES), start, stop)  # noqa: F821


def is_kernel(kernel):
    """True if ``kernel`` is a numba function (which can have entries)."""
    return isinstance(kernel, Dispatcher)


def compile_entry(kernel, args, code):
    """Address of the entry of ``kernel`` for these arguments (whose pack code is ``code``), or 0 if
    it has none (not a numba function, or the types do not match the code)."""
    arg_types = tuple(numba.typeof(a) for a in args)
    if type_code(arg_types) != code:
        return 0
    namespace = dict(globals(), KERNEL=kernel, ARG_TYPES=types.Tuple(arg_types))
    body = pytypes.FunctionType(_entry.__code__, namespace, "_entry")
    # numba names the cache file after the function: one name per kernel and argument types
    py_func = kernel.py_func
    body.__qualname__ = f"entry_{py_func.__module__.rsplit('.', 1)[-1]}_{py_func.__name__}_{code:08x}"
    try:
        entry = numba.cfunc(types.void(types.int64, types.int64, types.int64), cache=True)(body)
    except Exception:  # a kernel numba cannot call this way: the pool runs it from Python
        return 0
    _compiled.append(entry)  # (its machine code lives as long as this object)
    return entry.address


_compiled = []
