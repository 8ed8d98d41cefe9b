"""One folder per graded assignment: its probes/ (staged into every sandbox) and its trusted part."""
