"""Mutation testing of problem set 1 (see attnkit_grader.mutation): the behaviour that proves a surviving
mutant equivalent to the reference, and the committed table of the survivors that are not."""

import functools

import numpy as np
import torch

from attnkit_grader.authoring import raised

SIZES = [(5, 7, 2, 7), (8, 20, 3, 11), (3, 1, 1, 1), (6, 1000, 2, 9)]     # num_hiddens, max_len, batch, n



def behaviour(namespace, seed):
    """{key: float64 array or exception name}: parameters, outputs (eval, and train with dropout 0.3 and a
    fixed seed), gradients of sum(output * G), the default table's shape, and bad inputs' exceptions."""
    cls = namespace["LearnablePositionalEncoding"]
    rng = np.random.default_rng(seed)
    seen = {}
    for case, (num_hiddens, max_len, batch, n) in enumerate(SIZES):
        torch.manual_seed(seed)
        module = (cls(num_hiddens, 0.3) if max_len == 1000 else cls(num_hiddens, 0.3, max_len=max_len)).double()
        for name, parameter in module.named_parameters():
            seen[f"{case}/param/{name}"] = parameter.detach().numpy().copy()
        X = torch.from_numpy(rng.standard_normal((batch, n, num_hiddens)))
        G = torch.from_numpy(rng.standard_normal((batch, n, num_hiddens)))
        module.eval()
        seen[f"{case}/eval"] = module(X).detach().numpy()
        module.train()
        torch.manual_seed(seed + 1)
        output = module(X)
        seen[f"{case}/train"] = output.detach().numpy()
        seen[f"{case}/backward"] = raised((output * G).sum().backward)
        for name, parameter in module.named_parameters():
            grad = parameter.grad if parameter.grad is not None else torch.zeros_like(parameter)
            seen[f"{case}/grad/{name}"] = grad.numpy().copy()
        too_long = torch.zeros(1, max_len + 1, num_hiddens, dtype=torch.float64)
        seen[f"{case}/too long"] = raised(functools.partial(module, too_long))
    seen["bad dropout"] = raised(lambda: cls(4, 1.5))
    seen["bad size"] = raised(lambda: cls(0, 0.1, max_len=5))
    seen["bad max_len"] = raised(lambda: cls(4, 0.1, max_len=0))
    seen["bad rank"] = raised(lambda: cls(4, 0.1, max_len=5)(torch.zeros(5, 4)))
    seen["bad width"] = raised(lambda: cls(4, 0.1, max_len=5)(torch.zeros(1, 3, 5)))
    return seen


# Survivors that lose no points and are not proven equivalent: {(line, "before -> after"): reason}.
SURVIVORS = {
    (17, "if max_len < 1 or num_hiddens < 1: -> if max_len < 1 and num_hiddens < 1:"):
        "accepts num_hiddens = 0 (or max_len = 0) alone: rejecting sizes below 1 is not asked for by the "
        "exercise, so no check may cost points for it; sizes of 1 are probed and work",
}
