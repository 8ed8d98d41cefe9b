"""Problem set 2, relative positional encoding: probes/ (staged), reference, inputs, checks, hidden (trusted)."""
