"""Shared pytest setup: plots without a display, and the fixture notebooks kept out of collection."""

import matplotlib

# In-process only. Setting MPLBACKEND in os.environ would leak into the nbval kernels that
# `make test` starts beside these tests, and the lecture notebooks would then lose their figures.
matplotlib.use("Agg")

# Submission fixtures include notebooks that loop forever or are not JSON: never collect them as tests.
collect_ignore = ["fixtures"]
