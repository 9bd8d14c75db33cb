"""minigrad.nn: modules, layers, losses and initialisation, with PyTorch's names."""
from . import functional, init
from .layers import (
    ELU, GELU, CrossEntropyLoss, Dropout, Embedding, Flatten, Identity, LayerNorm, LeakyReLU, Linear, MSELoss, ReLU,
    Sigmoid, SiLU, Softplus, Tanh,
)
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential, Summary, summary
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase

__all__ = [
    "functional", "init", "Module", "ModuleList", "ModuleDict", "Sequential", "Parameter", "summary", "Summary",
    "Linear", "LayerNorm", "Embedding", "Dropout", "Flatten", "ReLU", "GELU", "Tanh", "Sigmoid", "Identity",
    "SiLU", "LeakyReLU", "Softplus", "ELU", "MSELoss", "CrossEntropyLoss",
    "RNNBase", "RNN", "GRU", "LSTM", "RNNCellBase", "RNNCell", "GRUCell", "LSTMCell",
]
