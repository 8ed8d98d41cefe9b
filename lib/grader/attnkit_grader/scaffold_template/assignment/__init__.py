"""{{title}}: probes/ (staged), the manifest and its trusted part (see assignment.py)."""
