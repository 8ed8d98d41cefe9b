"""Grading on a Dask cluster: the certificates (:mod:`.certs`), the workers' side (:mod:`.worker`), the grading
process's side (:mod:`.launcher`, used by :mod:`..autograders.cluster`) and the commands that start them
(:mod:`.commands`). How an instructor runs it, and what a worker is trusted with:
site/pages/en/guide/beyond.md#grading-on-a-cluster."""
