"""minigrad.nn: modules, layers, losses and initialisation, with PyTorch's names."""
from . import functional, init
from .layers import Dropout, Embedding, Flatten, Identity, LayerNorm, Linear
from .activation import (
    ELU, GELU, SELU, CosineSimilarity, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU6, Sigmoid,
    SiLU, Softmax, Softmin, Softplus, Tanh,
)
from .loss import (
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss,
)
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool1d, MaxPool2d
from .pooling import AdaptiveAvgPool1d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d
from .padding import (
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d,
    ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
    ZeroPad3d,
)
from .layers import Dropout1d, Dropout2d, Dropout3d, PixelShuffle, PixelUnshuffle
from .sampling import Upsample
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential, Summary, summary
from .containers import ParameterDict, ParameterList
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm1d, InstanceNorm2d
from .layers import Unflatten
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from . import utils  # noqa: E402  (nn.utils.clip_grad_norm_, as torch.nn.utils; after Module, which it needs)

from .transformer import (  # noqa: E402  (PyTorch's own Transformer modules; the paper's is in transformer/)
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "functional", "init", "utils", "Module", "ModuleList", "ModuleDict", "Sequential", "Parameter", "summary",
    "Summary", "ParameterList", "ParameterDict",
    "Linear", "LayerNorm", "Embedding", "Dropout", "Flatten", "ReLU", "GELU", "Tanh", "Sigmoid", "Identity",
    "SiLU", "LeakyReLU", "Softplus", "ELU", "ReLU6", "Hardtanh", "LogSigmoid", "Mish", "SELU", "PReLU",
    "Softmax", "LogSoftmax", "Softmin", "CosineSimilarity",
    "MSELoss", "CrossEntropyLoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "NLLLoss", "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d", "BatchNorm2d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "Unflatten",
    "Conv1d", "Conv2d", "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Upsample",
    "RNNBase", "RNN", "GRU", "LSTM", "RNNCellBase", "RNNCell", "GRUCell", "LSTMCell",
    "Dropout1d", "Dropout2d", "Dropout3d", "AvgPool1d", "AdaptiveAvgPool1d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
    "CircularPad2d", "CircularPad3d", "PixelShuffle", "PixelUnshuffle",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
    "TransformerDecoder", "Transformer",
]

from .lazy import (  # noqa: E402  (PyTorch's lazy layers: each input size read from the first batch)
    LazyBatchNorm1d, LazyBatchNorm2d, LazyConv1d, LazyConv2d, LazyConvTranspose2d, LazyLinear, UninitializedBuffer,
    UninitializedParameter,
)

__all__ += ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConvTranspose2d", "LazyBatchNorm1d", "LazyBatchNorm2d",
            "UninitializedParameter", "UninitializedBuffer"]

from .activation import (  # noqa: E402  (more of PyTorch's activations)
    CELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Softshrink, Softsign, Tanhshrink, Threshold,
)
from .loss import (  # noqa: E402  (more of PyTorch's losses)
    CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss, MultiLabelSoftMarginLoss,
    MultiMarginLoss, PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss,
)
from .layers import Bilinear, ChannelShuffle, Fold, Unfold  # noqa: E402

__all__ += ["Hardsigmoid", "Hardswish", "Softsign", "Tanhshrink", "Threshold", "GLU", "CELU", "Softshrink",
            "Hardshrink", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
            "GaussianNLLLoss", "PoissonNLLLoss", "MultiLabelSoftMarginLoss", "SoftMarginLoss", "MultiMarginLoss",
            "Bilinear", "Fold", "Unfold", "ChannelShuffle"]
