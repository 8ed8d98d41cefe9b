"""The two autograders behind `attnkit grade`: plain nbgrader and the sandboxed grader."""
