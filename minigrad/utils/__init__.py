"""minigrad.utils: `minigrad.utils.data` (Dataset, DataLoader, random_split), as in torch.utils."""
from . import data

__all__ = ["data"]
