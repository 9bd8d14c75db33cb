"""Module hooks, as PyTorch's: functions a module calls around its forward and its backward, to
look at (or change) what goes in and out of a layer without editing it: activations for a plot,
gradient norms per layer, a feature extractor.

    handle = model.fc1.register_forward_hook(lambda module, args, output: print(output.shape))
    model(x)                          # prints fc1's output shape
    handle.remove()

    forward pre hook    hook(module, args)                        before forward; may replace args
    forward hook        hook(module, args, output)                after forward; may replace output
    full backward hook  hook(module, grad_input, grad_output)     when the gradients of the module's
                                                                  inputs are known; may replace them

A backward hook works by an identity op (`_BackwardHookFunction`) put on the module's tensor
inputs and outputs: its backward is where the hooks run. `ModuleHooks` is the part of `Module`
that holds them; a module without hooks pays one attribute test per call (`_has_hooks`).
"""
import itertools
import warnings
import weakref
from collections import OrderedDict

import numpy as np

from ..autograd import Function
from ..compile import hooks_changed
from ..grad_mode import _modes
from ..tensor import Tensor

_HOOK_DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
               "_forward_hooks_always_called", "_backward_hooks", "_backward_pre_hooks")
_hook_ids = itertools.count()  # (handle ids, unique as PyTorch's; next() on a count is atomic)


class ModuleHooks:
    """The hooks of a Module (the class Module inherits this)."""

    _has_hooks = False  # True once a hook is registered on this module: __call__ then takes the slow path

    def _hook_dict(self, name):
        d = self.__dict__.get(name)
        if d is None:  # (a module made without Module.__init__, e.g. copied field by field)
            d = OrderedDict()
            object.__setattr__(self, name, d)
        return d

    def _refresh_hooks(self):
        """Set _has_hooks from the hook dicts (after a handle removed one, or they were cleared)."""
        has = any(self.__dict__.get(name) for name in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                                                       "_backward_pre_hooks"))
        if has:
            object.__setattr__(self, "_has_hooks", True)
        else:
            self.__dict__.pop("_has_hooks", None)  # (back to the class's False)

    def _add_hook(self, where, hook, prepend, flags=()):
        if not callable(hook):
            raise TypeError(f"{type(self).__name__}.register_*_hook: a hook must be callable, "
                            f"got {type(hook).__name__}")
        handle = RemovableHandle(self, (where,) + tuple(flags))
        hooks = self._hook_dict(where)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        for flag in flags:
            self._hook_dict(flag)[handle.id] = True
        object.__setattr__(self, "_has_hooks", True)
        hooks_changed()  # (a compiled step recorded before now would skip the hook: it records again)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call `hook(module, args)` before each forward; a return value other than None replaces
        args (a single value is wrapped in a tuple). With with_kwargs=True, `hook(module, args,
        kwargs)`, returning None or (new_args, new_kwargs). prepend=True: before the hooks already
        registered. Returns a handle whose `remove()` unregisters it (also `with handle: ...`)."""
        return self._add_hook("_forward_pre_hooks", hook, prepend,
                              ("_forward_pre_hooks_with_kwargs",) if with_kwargs else ())

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """Call `hook(module, args, output)` after each forward (`hook(module, args, kwargs, output)`
        with with_kwargs=True); a return value other than None replaces the output. With
        always_call=True it runs even when forward raises. Returns a handle with `remove()`.

        Looking at activations, as courses do: `acts = []; h = layer.register_forward_hook(lambda m, a,
        out: acts.append(out.detach())); model(x); h.remove()`. Inside a `minigrad.compile`d step a
        hook keeps working: the step runs eagerly (a replay would not call it), with a warning."""
        flags = (("_forward_hooks_with_kwargs",) if with_kwargs else ()) + (
            ("_forward_hooks_always_called",) if always_call else ())
        return self._add_hook("_forward_hooks", hook, prepend, flags)

    def register_full_backward_hook(self, hook, *, prepend=False):
        """Call `hook(module, grad_input, grad_output)` when the gradients with respect to the
        module's inputs are computed: tuples with one entry per positional argument of forward
        (None for an argument that is not a tensor requiring grad) and per output. A return value
        other than None (a tuple of the same length) replaces grad_input. As in PyTorch, the inputs
        and outputs pass through an identity op that calls the hook in its backward; if no input
        requires grad, the hook gets grad_input all None, when grad_output is known."""
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook, *, prepend=False):
        """Call `hook(module, grad_output)` when the gradients with respect to the module's outputs
        are known, before they flow into the module; a return value other than None (a tuple of the
        same length) replaces grad_output."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    def _call_with_hooks(self, args, kwargs):
        """__call__ for a module with hooks, in PyTorch's order: forward pre-hooks, the backward
        hooks' identity op on the inputs, forward, forward hooks, the identity op on the outputs."""
        get = self.__dict__.get
        pre, fwd = get("_forward_pre_hooks"), get("_forward_hooks")
        bwd, bwd_pre = get("_backward_hooks"), get("_backward_pre_hooks")
        if not (pre or fwd or bwd or bwd_pre):  # (all removed, or the dicts cleared by hand)
            self._refresh_hooks()
            return self.forward(*args, **kwargs)
        recorder = _modes.recorder
        if recorder is not None:  # minigrad.compile: a replay would not call the hooks (compile.py)
            recorder.refuse(f"{type(self).__name__} has hooks (register_forward_hook, ...), which a replay "
                            "would not call")
        result = None
        called = set()
        try:
            if pre:
                with_kwargs = get("_forward_pre_hooks_with_kwargs") or ()
                for hook_id, hook in tuple(pre.items()):
                    if hook_id in with_kwargs:
                        new = hook(self, args, kwargs)
                        if new is not None:
                            if not (isinstance(new, tuple) and len(new) == 2):
                                raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                                   f"new_kwargs), but got {new!r}.")
                            args, kwargs = new
                    else:
                        new = hook(self, args)
                        if new is not None:
                            args = new if isinstance(new, tuple) else (new,)
            backward_hooks = None
            if bwd or bwd_pre:
                backward_hooks = _BackwardHooks(self, tuple(bwd.values()) if bwd else (),
                                                tuple(bwd_pre.values()) if bwd_pre else ())
                args = backward_hooks.setup_input(args)
            result = self.forward(*args, **kwargs)
            if fwd:
                with_kwargs = get("_forward_hooks_with_kwargs") or ()
                always = get("_forward_hooks_always_called") or ()
                for hook_id, hook in tuple(fwd.items()):
                    if hook_id in always:
                        called.add(hook_id)
                    new = hook(self, args, kwargs, result) if hook_id in with_kwargs else hook(self, args, result)
                    if new is not None:
                        result = new
            if backward_hooks is not None:
                result = backward_hooks.setup_output(result)
            return result
        except Exception:
            always = get("_forward_hooks_always_called")
            if fwd and always:
                with_kwargs = get("_forward_hooks_with_kwargs") or ()
                for hook_id, hook in tuple(fwd.items()):
                    if hook_id not in always or hook_id in called:
                        continue
                    try:
                        new = hook(self, args, kwargs, result) if hook_id in with_kwargs else hook(self, args, result)
                        if new is not None:
                            result = new
                    except Exception as e:  # noqa: BLE001  (as PyTorch: the first error is the one raised)
                        warnings.warn("forward hook with ``always_call=True`` raised an exception that was "
                                      f"silenced as another error was raised in forward: {e}", stacklevel=2)
            raise


class RemovableHandle:
    """What `register_*_hook` returns, as torch.utils.hooks.RemovableHandle: `remove()` unregisters
    the hook (again: nothing); `with module.register_forward_hook(h): ...` removes it on leaving."""

    def __init__(self, module, dict_names):
        self.id = next(_hook_ids)
        self._module = weakref.ref(module)
        self._dict_names = dict_names

    def remove(self):
        module = self._module()
        if module is None:
            return
        found = False
        for name in self._dict_names:
            d = module.__dict__.get(name)
            if d is not None and d.pop(self.id, None) is not None:
                found = True
        if found:
            module._refresh_hooks()
            hooks_changed()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _BackwardHookFunction(Function):
    """The identity, on several tensors at once, whose backward calls `on_backward(grads)` (the
    module's backward hooks) and returns what it returns. Its outputs are views of its inputs
    (sharing their version counts, so an in-place change of one is seen by the other's checks)."""

    @staticmethod
    def forward(ctx, *arrays, on_backward):
        ctx.on_backward = on_backward
        return tuple(a.view() for a in arrays)

    rule = "the identity: each input's gradient is its output's, as the module's backward hooks return it"

    @staticmethod
    def backward(ctx, *grads):
        return ctx.on_backward(grads)


def _grad_tensor(g):
    """A gradient array, as the (read-only: it may be shared with other sums of the walk) Tensor a hook gets."""
    if g is None:
        return None
    view = np.asarray(g).view()
    view.flags.writeable = False
    return Tensor._from_op(view, False)


def _grad_array(g, what):
    if g is None or isinstance(g, np.ndarray):
        return g
    if isinstance(g, Tensor):
        return g._data
    if hasattr(g, "detach") and hasattr(g, "numpy"):  # (a PyTorch tensor)
        return g.detach().cpu().numpy()
    raise TypeError(f"{what} must return Tensors (or None), got {type(g).__name__}")


class _BackwardHooks:
    """One call of a module with full backward hooks (torch.utils.hooks.BackwardHook): its tensor
    arguments that require grad, and then its tensor outputs, go through a _BackwardHookFunction.
    The outputs' backward runs first: it notes grad_output (after the pre-hooks); the inputs'
    backward then calls the hooks with grad_input and grad_output."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs, self.input_index = 0, None
        self.n_outputs, self.output_index = 0, None

    @staticmethod
    def _pack(index, values, size):
        out = [None] * size
        for i, v in zip(index, values):
            out[i] = v
        return tuple(out)

    @staticmethod
    def _wrap(values, on_backward):
        """values with its tensors that require grad passed through the identity op; and their
        positions (None if there is none, or grad mode is off: no backward will come)."""
        index = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]
        if not index or not _modes.grad_enabled:
            return values, None
        outs = _BackwardHookFunction.apply(*[values[i] for i in index], on_backward=on_backward)
        values = list(values)
        for i, out in zip(index, outs):
            values[i] = out
        return tuple(values), index

    def setup_input(self, args):
        self.n_inputs = len(args)
        args, self.input_index = self._wrap(args, self._input_backward)
        return args

    def setup_output(self, result):
        single = not isinstance(result, tuple)
        if single and not isinstance(result, Tensor):
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                          f"but received {type(result).__name__}", stacklevel=3)
        outputs = (result,) if single else result
        self.n_outputs = len(outputs)
        outputs, self.output_index = self._wrap(outputs, self._output_backward)
        return outputs[0] if single else outputs

    def _call(self, hook, args, what):
        """hook(module, *args): None, or the gradients it returns, as many as the first of args."""
        new = hook(self.module, *args)
        if new is None:
            return None
        new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
        if len(new) != len(args[0]):
            kind = "grad_output" if "pre" in what else "grad_input"
            raise RuntimeError(f"{what} returned an invalid number of {kind}, got {len(new)}, but expected "
                               f"{len(args[0])}")
        return new

    def _output_backward(self, grads):
        grad_outputs = self._pack(self.output_index, [_grad_tensor(g) for g in grads], self.n_outputs)
        for hook in self.pre_hooks:
            new = self._call(hook, (grad_outputs,), "Backward pre hook")
            if new is not None:
                grad_outputs = new
        self.grad_outputs = grad_outputs
        if self.input_index is None:  # no input requires grad: the hooks run now, with grad_input all None
            if self.hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                              "outputs since no inputs require gradients.", stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                new = hook(self.module, grad_inputs, grad_outputs)
                if new is not None and not (isinstance(new, tuple) and all(x is None for x in new)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(_grad_array(grad_outputs[i], "a backward pre hook") for i in self.output_index)

    def _input_backward(self, grads):
        if self.grad_outputs is None:  # (the gradient reached the inputs without passing through the outputs)
            return grads
        grad_inputs = self._pack(self.input_index, [_grad_tensor(g) for g in grads], self.n_inputs)
        for hook in self.hooks:
            new = self._call(hook, (grad_inputs, self.grad_outputs), "Backward hook")
            if new is not None:
                grad_inputs = new
        self.grad_outputs = None
        return tuple(_grad_array(grad_inputs[i], "a backward hook") for i in self.input_index)
