"""Problem set 1, learnable positional encoding: probes/ (staged), reference, checks, hidden (trusted)."""
