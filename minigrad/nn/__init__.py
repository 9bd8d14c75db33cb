"""minigrad.nn: modules, layers, losses and initialisation, with PyTorch's names."""
from . import functional, init
from .layers import (
    ELU, GELU, Dropout, Embedding, Identity, LayerNorm, LeakyReLU, Linear, ReLU, Sigmoid, SiLU, Softplus, Tanh,
)
from .module import Module, ModuleList, Parameter, Sequential

__all__ = [
    "functional", "init", "Module", "ModuleList", "Sequential", "Parameter",
    "Linear", "LayerNorm", "Embedding", "Dropout", "ReLU", "GELU", "Tanh", "Sigmoid", "Identity",
    "SiLU", "LeakyReLU", "Softplus", "ELU",
]
