"""Mutation testing of problem set 2 (see attnkit_grader.mutation): the behaviour that proves a surviving
mutant equivalent to the reference, and the committed table of the survivors that are not."""

import functools

import numpy as np
import torch

from attnkit_grader.authoring import raised

ATTENTION = [(8, 2, 2, False, 3, 5, "none"), (12, 3, 1, True, 4, 4, "batch"), (6, 1, 0, False, 2, 6, "rows"),
             (16, 4, 3, False, 5, 3, "rows")]    # num_hiddens, heads, max_distance, bias, q, k, valid_lens



def _tensor(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape))


def _attention(namespace, seed, rng, seen):
    cls = namespace["RelativeMultiHeadAttention"]
    for case, (num_hiddens, heads, k, bias, q, n, lens) in enumerate(ATTENTION):
        torch.manual_seed(seed)
        module = (cls(num_hiddens, heads, 0.3, k, bias=True) if bias else cls(num_hiddens, heads, 0.3, k)).double()
        for name, parameter in module.named_parameters():
            seen[f"attn{case}/param/{name}"] = parameter.detach().numpy().copy()
        queries, keys = _tensor(rng, 2, q, num_hiddens), _tensor(rng, 2, n, num_hiddens)
        G = _tensor(rng, 2, q, num_hiddens)
        valid = {"none": None, "batch": torch.tensor([n, max(1, n - 2)]),
                 "rows": torch.from_numpy(rng.integers(0, n + 1, size=(2, q)))}[lens]
        module.eval()
        seen[f"attn{case}/eval"] = module(queries, keys, keys, valid).detach().numpy()
        seen[f"attn{case}/weights"] = module.attention_weights.detach().numpy().copy()
        module.train()
        torch.manual_seed(seed + 1)
        output = module(queries, keys, keys, valid)
        seen[f"attn{case}/train"] = output.detach().numpy()
        seen[f"attn{case}/backward"] = raised((output * G).sum().backward)
        for name, parameter in module.named_parameters():
            grad = parameter.grad if parameter.grad is not None else torch.zeros_like(parameter)
            seen[f"attn{case}/grad/{name}"] = grad.numpy().copy()
    X3, X4 = torch.zeros(1, 3, 8), torch.zeros(1, 4, 8)
    bad = {"heads": lambda: cls(10, 3, 0.1, 2), "no heads": lambda: cls(8, 0, 0.1, 2),
           "distance": lambda: cls(8, 2, 0.1, -1), "dropout": lambda: cls(8, 2, 1.5, 2),
           "width": lambda: cls(8, 2, 0.0, 2)(torch.zeros(1, 3, 7), X3, X3),
           "lens": lambda: cls(8, 2, 0.0, 2)(X3, X4, X4, torch.tensor([5]))}
    for name, call in bad.items():
        seen[f"attn bad {name}"] = raised(call)


def _causal(namespace, rng, seen):
    for L, d, width in ((1, 3, 3), (5, 4, 4), (7, 3, 6)):
        inputs = [_tensor(rng, 2, L, d), _tensor(rng, 2, L, d), _tensor(rng, 2, L, width), _tensor(rng, L, d)]
        G = _tensor(rng, 2, L, width)
        for name in ("causal_relative_attention_naive", "causal_relative_attention"):
            leaves = [x.clone().requires_grad_() for x in inputs]
            output, weights = namespace[name](*leaves)
            seen[f"{name}/{L}/output"] = output.detach().numpy()
            seen[f"{name}/{L}/weights"] = weights.detach().numpy()
            seen[f"{name}/{L}/backward"] = raised((output * G).sum().backward)
            for index, leaf in enumerate(leaves):
                grad = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
                seen[f"{name}/{L}/grad{index}"] = grad.numpy().copy()
    for name in ("causal_relative_attention_naive", "causal_relative_attention"):
        function = namespace[name]
        Z = torch.zeros(1, 3, 4)
        cases = {"rank": (torch.zeros(3, 4), Z, Z, torch.zeros(3, 4)),
                 "keys": (Z, torch.zeros(1, 2, 4), Z, torch.zeros(3, 4)),
                 "rel_k": (Z, Z, Z, torch.zeros(2, 4)),
                 "dim": (Z, torch.zeros(1, 3, 5), Z, torch.zeros(3, 4))}
        for bad, args in cases.items():
            seen[f"{name} bad {bad}"] = raised(functools.partial(function, *args))


def behaviour(namespace, seed):
    """{key: float64/int64 array or exception name}: every public function and the module on random inputs,
    in eval and train mode (dropout 0.3, fixed seed), their gradients, and bad inputs' exceptions."""
    rng = np.random.default_rng(seed)
    seen = {}
    index = namespace["relative_position_index"]
    for q, n, k in ((4, 6, 2), (5, 3, 1), (3, 3, 0), (2, 7, 9), (0, 3, 1), (3, 0, 2)):
        result = index(q, n, k)
        seen[f"index/{q}/{n}/{k}"] = result.numpy().copy()
        seen[f"index/{q}/{n}/{k}/dtype"] = str(result.dtype)
    seen["index bad"] = raised(lambda: index(3, 3, -1))
    skew = namespace["skew"]
    for shape in ((1, 1), (4, 4), (2, 3, 6, 6)):
        X = _tensor(rng, *shape)
        lower = torch.ones(shape[-1], shape[-1], dtype=torch.bool).tril()
        result = skew(X)
        seen[f"skew/{shape}"] = torch.where(lower, result, torch.zeros(())).numpy()
        seen[f"skew/{shape}/dtype"] = str(result.dtype)
    seen["skew bad"] = raised(lambda: skew(torch.zeros(3, 4)))
    _attention(namespace, seed, rng, seen)
    _causal(namespace, rng, seen)
    return seen


# Survivors that lose no points and are not proven equivalent: {(line, "before -> after"): reason}.
SURVIVORS = {}
