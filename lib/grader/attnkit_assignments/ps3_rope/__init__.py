"""Rotary position embeddings and ALiBi: probes/ (staged), the manifest and its trusted part (see assignment.py)."""
