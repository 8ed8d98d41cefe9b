"""The judging engine: the check registry, comparisons, verdicts, and the same checks in the kernel."""
