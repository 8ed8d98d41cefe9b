"""Mutation testing of problem set 3 (see attnkit_grader.mutation): the behaviour that proves a surviving
mutant equivalent to the reference, and the committed table of the survivors that are not."""

import numpy as np
import torch

from attnkit_grader.authoring import raised

# num_hiddens, heads, bias, q, k, valid_lens, causal, position_offset
ATTENTION = [(8, 2, False, 3, 3, None, False, 0), (12, 3, True, 4, 4, (4, 2), True, 0),
             (8, 1, False, 2, 6, (6, 3), True, 4), (16, 4, False, 5, 3, (3, 0), False, 7)]


def _tensor(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape))


def _rope(namespace, rng, seen):
    rope = namespace["rotary_embedding"]
    for case, (shape, start, base) in enumerate((((3, 4), 0, 10000), ((2, 5, 8), 3, 100), ((1, 2, 1, 2), 9, 10000))):
        x = _tensor(rng, *shape)
        positions = torch.arange(start, start + shape[-2])
        seen[f"rope{case}"] = rope(x, positions, base).numpy()
    seen["rope default base"] = rope(_tensor(rng, 3, 6), torch.arange(3)).numpy()
    seen["rope bad odd"] = raised(lambda: rope(torch.zeros(3, 5), torch.arange(3)))
    seen["rope bad rank"] = raised(lambda: rope(torch.zeros(4), torch.arange(4)))
    seen["rope bad positions"] = raised(lambda: rope(torch.zeros(3, 4), torch.arange(2)))


def _attention(namespace, seed, rng, seen):
    cls = namespace["RotaryMultiHeadAttention"]
    for case, (num_hiddens, heads, bias, q, k, lens, causal, offset) in enumerate(ATTENTION):
        torch.manual_seed(seed)
        module = cls(num_hiddens, heads, 0.3, bias=bias).double()
        for name, parameter in module.named_parameters():
            seen[f"attn{case}/param/{name}"] = parameter.detach().numpy().copy()
        queries, keys = _tensor(rng, 2, q, num_hiddens), _tensor(rng, 2, k, num_hiddens)
        G = _tensor(rng, 2, q, num_hiddens)
        valid = None if lens is None else torch.tensor(lens)
        module.eval()
        seen[f"attn{case}/eval"] = module(queries, keys, keys, valid, causal=causal, position_offset=offset)\
            .detach().numpy()
        seen[f"attn{case}/weights"] = module.attention_weights.detach().numpy().copy()
        module.train()
        torch.manual_seed(seed + 1)
        output = module(queries, keys, keys, valid, causal=causal, position_offset=offset)
        seen[f"attn{case}/train"] = output.detach().numpy()
        seen[f"attn{case}/backward"] = raised((output * G).sum().backward)
        for name, parameter in module.named_parameters():
            grad = parameter.grad if parameter.grad is not None else torch.zeros_like(parameter)
            seen[f"attn{case}/grad/{name}"] = grad.numpy().copy()
    X3 = torch.zeros(1, 3, 8)
    bad = {"odd head_dim": lambda: cls(6, 2, 0.0), "heads": lambda: cls(8, 3, 0.0), "no heads": lambda: cls(8, 0, 0.0),
           "dropout": lambda: cls(8, 2, 1.5), "offset": lambda: cls(8, 2, 0.0)(X3, X3, X3, position_offset=-1),
           "width": lambda: cls(8, 2, 0.0)(torch.zeros(1, 3, 6), X3, X3)}
    for name, call in bad.items():
        seen[f"attn bad {name}"] = raised(call)


def _alibi(namespace, rng, seen):
    slopes_of, bias_of, attention = (namespace[name] for name in ("alibi_slopes", "alibi_bias",
                                                                   "causal_alibi_attention"))
    for n in (1, 2, 3, 5, 6, 8, 12, 16, 24):
        seen[f"slopes/{n}"] = slopes_of(n).double().numpy()
    seen["slopes bad"] = raised(lambda: slopes_of(0))
    for q, k in ((4, 4), (2, 5), (1, 1), (0, 3)):
        seen[f"bias/{q}/{k}"] = bias_of(q, k, torch.tensor([0.5, 0.25], dtype=torch.float64)).numpy()
    seen["bias bad"] = raised(lambda: bias_of(5, 3, torch.tensor([0.5])))
    for batch, heads, q, k, d in ((1, 2, 4, 4, 4), (2, 3, 2, 5, 3), (1, 1, 1, 1, 2)):
        leaves = [_tensor(rng, batch, heads, n, d).requires_grad_() for n in (q, k, k)]
        slopes = slopes_of(heads).double()
        output = attention(*leaves, slopes)
        seen[f"alibi/{q}/{k}"] = output.detach().numpy()
        seen[f"alibi/{q}/{k}/backward"] = raised(output.sum().backward)
        for index, leaf in enumerate(leaves):
            seen[f"alibi/{q}/{k}/grad{index}"] = leaf.grad.numpy().copy() if leaf.grad is not None else None
    Z = torch.zeros(1, 2, 3, 4)
    seen["alibi bad rank"] = raised(lambda: attention(torch.zeros(2, 3, 4), Z, Z, torch.ones(2)))
    seen["alibi bad slopes"] = raised(lambda: attention(Z, Z, Z, torch.ones(3)))


def behaviour(namespace, seed):
    """{key: float64 array or exception name}: every public function and the module on random inputs (the
    module in eval and train mode, dropout 0.3 with a fixed seed, and its gradients), and bad inputs'
    exceptions."""
    rng = np.random.default_rng(seed)
    seen = {}
    _rope(namespace, rng, seen)
    _attention(namespace, seed, rng, seen)
    _alibi(namespace, rng, seen)
    return {key: value for key, value in seen.items() if value is not None}


# Survivors that lose no points and are not proven equivalent: {(line, "before -> after"): reason}.
SURVIVORS = {}
