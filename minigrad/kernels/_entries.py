"""How a worker thread calls a compiled kernel without Python: C entry points.

A kernel is called from Python as ``kernel(*args, start, stop)``: numba reads each Python argument
(an array, a float, ...) and calls the machine code. A worker thread that polls in compiled code
(``_spin.serve``) cannot do that without taking the GIL. So the pool calls kernels through small C
functions, *entries*, which all have one signature, whatever the kernel's arguments:

    int64 entry(int64 kernel, int64 block, int64 start, int64 stop)

- ``block`` is the address of an int64 array that holds the arguments, written by ``pack`` (arrays
  by ``pack_array``, compiled once per array type; numbers from Python): nine numbers per argument,

      array:        data address, shape (4 slots), strides in bytes (4 slots)
      float:        its 64 bits (a float32 argument is widened to float64 and back)
      int, bool:    the value

- the entry unpacks them (``_unpack``) into arguments of exactly the numba types the kernel was
  compiled for, and calls ``kernel``, the address of the kernel's machine code, as numba calls one
  compiled function from another (``call_native``, which matmul.py's ``call_block`` uses too);
- it returns 0, or 1 if the kernel raised an exception. The exception itself stays behind (numba
  keeps its details in memory that only its own Python wrapper turns into an exception): the pool
  notes the chunk, and the caller's thread calls the kernel on that chunk again from Python, which
  raises the error with its message (``_parallel.py``).

One entry serves every kernel compiled for the same argument types (softmax and log-softmax, say).
``pack`` returns a key of the argument types (for an array, a CRC of its numba type; for a number,
its kind), which picks the kernel's machine code and entry: arguments are never unpacked as the
wrong types. An entry is compiled the
first time it is needed and cached by numba like every kernel: a fraction of a second once, a
millisecond or two to load afterwards. A kernel that is not a numba function, or takes an argument
of another kind, has no entry: the pool runs it from Python (``_parallel.py``).
"""
import types as pytypes
import zlib

import numpy as np

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


def _slot(builder, block, index):
    """Pointer to number ``index`` (an LLVM value) of the int64 block at address ``block``."""
    return builder.gep(builder.inttoptr(block, _I64.as_pointer()), [index])


def array_code(array_type):
    """The code ``pack_array`` returns for an array of this numba type."""
    return zlib.crc32(str(array_type).encode())


@intrinsic
def _pack_array(typingctx, block, index, array):
    """Write argument ``index``, an array, into the block: data address, shape, strides."""
    if not (isinstance(array, types.Array) and array.ndim <= MAX_NDIM):
        return None

    def codegen(context, builder, signature, llargs):
        block_address, index_value, value = llargs
        first = builder.mul(index_value, ir.Constant(_I64, SLOTS))

        def put(k, number):
            builder.store(number, _slot(builder, block_address, builder.add(first, ir.Constant(_I64, k))))

        fields = context.make_array(array)(context, builder, value)
        put(0, builder.ptrtoint(fields.data, _I64))
        shape, strides = cgutils.unpack_tuple(builder, fields.shape), cgutils.unpack_tuple(builder, fields.strides)
        for d in range(array.ndim):
            put(1 + d, shape[d])
            put(1 + MAX_NDIM + d, strides[d])
        return context.get_constant(types.int64, array_code(array))

    return types.int64(types.int64, types.intp, array), codegen


@intrinsic
def _unpack(typingctx, block, arg_types):
    """The arguments in the block at address ``block``, as a tuple of the types ``arg_types``."""
    tuple_type = arg_types.instance_type

    def codegen(context, builder, signature, llargs):
        values = []
        for i, ty in enumerate(tuple_type.types):
            def get(k, i=i):
                return builder.load(_slot(builder, llargs[0], ir.Constant(_I64, i * SLOTS + k)))

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


def call_native(context, builder, address, arg_types, values):
    """Emit a call of the compiled function at ``address`` (an LLVM int64) that returns nothing,
    with ``values`` of the numba types ``arg_types``, as numba calls one compiled function from
    another (its calling convention); -> numba's status of the call (``status.is_error``: it raised)."""
    call_conv = context.call_conv
    function_type = call_conv.get_function_type(types.none, arg_types)
    function = builder.inttoptr(address, function_type.as_pointer())
    result = cgutils.alloca_once(builder, function_type.args[0].pointee)
    builder.store(cgutils.get_null_value(result.type.pointee), result)
    exception = cgutils.alloca_once(builder, function_type.args[1].pointee)
    packed = call_conv._get_arg_packer(arg_types).as_arguments(builder, values)
    code = builder.call(function, [result, exception, *packed])
    return call_conv._get_return_status(builder, code, builder.load(exception))


@intrinsic
def _call_native(typingctx, kernel, args, start, stop):
    """Call the compiled kernel whose machine code is at address ``kernel`` with ``(*args, start,
    stop)`` (``call_native``); -> 1 if it raised, else 0."""
    arg_types = tuple(args.types) + (types.int64, types.int64)

    def codegen(context, builder, signature, llargs):
        values = [builder.extract_value(llargs[1], i) for i in range(len(args))] + list(llargs[2:])
        status = call_native(context, builder, llargs[0], arg_types, values)
        return builder.zext(status.is_error, _I64)

    return types.int64(types.int64, args, types.int64, types.int64), codegen


@jit
def pack_array(block, index, array):
    """Write argument ``index``, an array, into the int64 block at address ``block``; -> a code
    of its numba type (dtype, dimensions, layout, read-only)."""
    return _pack_array(block, index, array)


_SCALARS = {float: "float", int: "int", bool: "bool", np.float64: "float", np.float32: "float32",
            np.int64: "int", np.int32: "int32", np.bool_: "bool"}


def pack(block, floats, address, args):
    """Write ``args`` into ``block`` (int64, at ``address``); -> a key of their types, or None if one
    of them is of a kind the block cannot hold. Arrays go through ``pack_array``; numbers are
    written from here (a float as its 64 bits, through ``floats``, a float64 view of the block)."""
    if len(args) > MAX_ARGS:
        return None
    key = []
    for i, arg in enumerate(args):
        kind = type(arg)
        if kind is np.ndarray and arg.ndim <= MAX_NDIM:
            key.append(pack_array(address, i, arg))
            continue
        name = _SCALARS.get(kind)
        if name is None:
            return None
        key.append(name)
        if name[0] == "f":
            floats[i * SLOTS] = arg
        else:
            block[i * SLOTS] = arg
    return tuple(key)


def _entry(kernel, block, start, stop):
    # The body of every entry; ARG_TYPES (the kernel's own) is set per entry (see _compile_entry).
    return _call_native(kernel, _unpack(block, ARG_TYPES), start, stop)  # noqa: F821


def is_kernel(kernel):
    """True if ``kernel`` is a numba function (which can have entries)."""
    return isinstance(kernel, Dispatcher)


def _fits(given, declared):
    """True if an argument of numba type ``given``, packed, can be unpacked as ``declared``: the
    same type; an array the kernel was compiled for in any layout ('A') or read-only; a number of the
    same kind (the entry converts it as numba would)."""
    if isinstance(given, types.Array) and isinstance(declared, types.Array):
        return (given.dtype == declared.dtype and given.ndim == declared.ndim
                and declared.layout in ("A", given.layout) and (given.mutable or not declared.mutable))
    kinds = (types.Boolean, types.Integer, types.Float)
    return any(isinstance(given, kind) and isinstance(declared, kind) for kind in kinds)


def _machine_code(kernel, arg_types):
    """numba's compiled version of ``kernel`` that a call with these argument types runs (compiled
    or loaded from the cache if need be), or None."""
    full = tuple(arg_types) + (types.int64, types.int64)
    compiled = kernel.overloads.get(full)
    if compiled is None:
        compiled = next((c for signature, c in kernel.overloads.items()
                         if len(signature) == len(full) and all(map(_fits, full, signature))), None)
    if compiled is None and kernel._can_compile:
        kernel.compile(full)
        compiled = kernel.overloads.get(full)
    return compiled


def _compile_entry(arg_types):
    namespace = dict(globals(), ARG_TYPES=types.Tuple(tuple(arg_types)))
    body = pytypes.FunctionType(_entry.__code__, namespace, "_entry")
    body.__qualname__ = f"entry_{zlib.crc32(str(arg_types).encode()):08x}"  # numba names the cache file after it
    signature = types.int64(types.int64, types.int64, types.int64, types.int64)
    return numba.cfunc(signature, cache=True)(body)


_entries = {}  # the kernel's argument types -> the entry compiled for them (it owns the machine code)


def entry_of(kernel, args, key):
    """(address of the entry, address of the kernel's machine code) for a call of ``kernel`` with
    ``args`` (whose ``pack`` key is ``key``), or None if it has none."""
    arg_types = tuple(numba.typeof(a) for a in args)
    codes = tuple(array_code(t) if isinstance(t, types.Array) else None for t in arg_types)
    if any(code is not None and code != k for code, k in zip(codes, key)):
        return None
    try:
        compiled = _machine_code(kernel, arg_types)
        if compiled is None or compiled.signature.return_type != types.none:  # (entries return nothing)
            return None
        declared = compiled.signature.args[:-2]
        entry = _entries.get(declared)
        if entry is None:
            entry = _entries[declared] = _compile_entry(declared)
        address = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
        return (entry.address, address) if address else None
    except Exception:  # a kernel numba cannot call this way: the pool runs it from Python
        return None
