"""Grading on a Dask cluster: the certificates (:mod:`.certs`), the workers' side (:mod:`.worker`), the grading
process's side (:mod:`.launcher`, used by :mod:`..autograders.cluster`) and the commands that start them
(:mod:`.commands`). The guide's "beyond one machine" page says how an instructor runs it."""
