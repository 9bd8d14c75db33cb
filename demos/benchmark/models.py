"""The two GPTs the benchmark trains: minigrad's (transformer/model.py) and the same model in PyTorch.

Both are built from the same settings, have the same parameters under the same names, initialise
them the same way (or copy minigrad's values, `copy_weights`), and train with the same AdamW on the
same fixed, seeded pool of random batches. A trainer is a `step()` that runs forward, backward,
the optimizer's step and zero_grad, and returns the loss.
"""
import math

import numpy as np

# the two GPT configurations: (name, model settings, batch size)
GPT_CONFIGS = [
    ("small", dict(vocab_size=65, block_size=32, n_layer=2, n_head=4, d_model=64), 16),
    ("nanoGPT-cpu", dict(vocab_size=65, block_size=64, n_layer=4, n_head=4, d_model=128), 12),
]
NANOGPT_CPU = 1  # index of nanoGPT's CPU configuration in GPT_CONFIGS
ADAMW = dict(lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
POOL_BATCHES = 16  # random batches in the fixed, seeded pool both frameworks train on


def build_torch_gpt(torch, vocab_size, block_size, n_layer, n_head, d_model, bias=True):
    """The GPT of transformer/model.py in PyTorch: learned positions, pre-LN blocks, fused qkv,
    causal scaled_dot_product_attention, 4x MLP with exact GELU, final LayerNorm, tied head."""
    nn, F = torch.nn, torch.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(d_model, 3 * d_model, bias=bias)
            self.c_proj = nn.Linear(d_model, d_model, bias=bias)

        def forward(self, x):
            B, T, C = x.shape
            qkv = self.c_attn(x).view(B, T, 3, n_head, C // n_head).permute(2, 0, 3, 1, 4)
            heads = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
            return self.c_proj(heads.transpose(1, 2).reshape(B, T, C))

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(d_model, 4 * d_model, bias=bias)
            self.c_proj = nn.Linear(4 * d_model, d_model, bias=bias)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x)))  # exact (erf) GELU, as minigrad's

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(d_model, bias=bias), Attention()
            self.ln_2, self.mlp = nn.LayerNorm(d_model, bias=bias), FeedForward()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class TorchGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, d_model)
            self.wpe = nn.Embedding(block_size, d_model)
            self.h = nn.ModuleList(Block() for _ in range(n_layer))
            self.ln_f = nn.LayerNorm(d_model, bias=bias)
            for name, p in self.named_parameters():  # the same initialisation as minigrad's GPT
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, std=0.02 / math.sqrt(2 * n_layer))
                elif p.dim() > 1:
                    nn.init.normal_(p, std=0.02)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx, targets):
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe.weight[:T]
            for block in self.h:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)  # head tied to the token embedding
            return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    return TorchGPT()


def copy_weights(model, torch_model, torch):
    """Give the PyTorch model the values of minigrad's `model` (the names match one to one)."""
    state = {name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in model.state_dict().items()}
    torch_model.load_state_dict(state)  # strict: a missing or extra name is an error


def batch_pool(seed, vocab_size, block_size, batch_size):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, vocab_size, (batch_size, block_size), dtype=np.int64),
             rng.integers(0, vocab_size, (batch_size, block_size), dtype=np.int64))
            for _ in range(POOL_BATCHES)]


def _cycle(pool):
    """A function that returns the pool's batches one after the other, round and round."""
    counter = [0]

    def next_batch():
        batch = pool[counter[0] % len(pool)]
        counter[0] += 1
        return batch

    return next_batch


def make_minigrad_trainer(config, batch_size, seed, compiled=False):
    """-> (step() -> loss, number of parameters). compiled=True: the step goes through minigrad.compile
    (recorded at its second call, replayed from the third on)."""
    import minigrad
    from minigrad import optim
    from transformer import GPT, GPTConfig

    minigrad.manual_seed(seed)
    model = GPT(GPTConfig(**config))
    model.train()
    optimizer = optim.AdamW(model.parameters(), **ADAMW)
    next_batch = _cycle(batch_pool(seed, config["vocab_size"], config["block_size"], batch_size))

    def train_step(x, y):
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    train_step = minigrad.compile(train_step) if compiled else train_step

    def step():
        x, y = next_batch()
        return train_step(minigrad.tensor(x), minigrad.tensor(y))

    return step, model.num_parameters()


def make_torch_trainer(torch, config, batch_size, seed):
    """-> (step() -> loss, number of parameters)"""
    torch.manual_seed(seed)
    model = build_torch_gpt(torch, **config)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), **ADAMW)  # foreach: PyTorch's default
    pool = [(torch.from_numpy(x), torch.from_numpy(y))
            for x, y in batch_pool(seed, config["vocab_size"], config["block_size"], batch_size)]
    next_batch = _cycle(pool)

    def step():
        x, y = next_batch()
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step, sum(p.numel() for p in model.parameters())
