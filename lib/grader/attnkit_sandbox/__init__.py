"""What runs inside the grading sandbox: the runner, the channel format, the probe machinery.

Staged whole into every sandbox, with the student package attnkit and each assignment's probes/;
nothing here imports the grader, nbgrader or a reference solution (a test reads the staged tree).
"""
