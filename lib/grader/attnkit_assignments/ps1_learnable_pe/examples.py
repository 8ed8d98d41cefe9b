"""What problem set 1's students hand in in the kit's example class, besides the instructor's answers and the
blank release, and the points each must get: ``submissions(kit)`` (the format: ``Kit`` and ``build`` in
examples/make_example_class.py)."""

def submissions(kit):
    reference = kit.answers()

    # Partly right: forgets the ValueError and the dropout; a short written answer for the manual grader.
    partial = kit.code_only(reference)
    partial["pe_answer"] = kit.replace_once(
        kit.replace_once(partial["pe_answer"],
                         "        if num_steps > self.max_len:\n"
                         "            raise ValueError(f\"X has {num_steps} positions (X.shape[1]) but the table has \"\n"
                         "                             f\"max_len={self.max_len} rows\")\n", ""),
        "return self.dropout(X + self.table(positions))", "return X + self.table(positions)")
    partial["experiment_written"] = "The learned one fails after position 16, the sinusoidal one too."

    frozen = kit.code_only(kit.with_bug(
        "pe_answer", "self.table = nn.Embedding(max_len, num_hiddens)",
        "self.table = nn.Embedding(max_len, num_hiddens)\n"
        "        self.table.weight.requires_grad_(False)"))

    # Broken submissions.
    text = kit.writes(kit.fill(kit.code_only(reference)))
    deleted = kit.fill(kit.code_only(reference))
    deleted.cells = [c for c in deleted.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "test_pe_forward"]
    looping = kit.code_only(reference)
    looping["pe_answer"] = ("step = 0\nwhile step >= 0:   # meant to stop when step reaches 10\n    step += 1\n\n"
                            + looping["pe_answer"])
    # A cheater executes the text of the reference's source file.
    executing = kit.code_only(reference)
    executing["pe_answer"] = ('import importlib.util\n\n'
                              'spec = importlib.util.find_spec("attnkit_assignments.ps1_learnable_pe.reference")\n'
                              'with open(spec.origin, encoding="utf-8") as source_file:\n'
                              '    exec(source_file.read())')
    zero = {"test_pe_table": 0.0, "test_pe_forward": 0.0}
    return {
        # no ValueError beyond max_len (-0.5: an IndexError from nn.Embedding instead), no dropout (-1)
        "partial": (kit.fill(partial), {"test_pe_forward": 2.5}, ("Pat", "Partial")),
        # trainable -0.25, gradient -0.5 and -0.25 (no gradient: named as the catalogued frozen table, but
        # zeros prove no work); the output the gradient flows through is right (0.25), so the parameter
        # shape and default max_len count: 1; the forward pass is right
        "bug_frozen_table": (kit.fill(frozen), {"test_pe_table": 1.0}, ("Fran", "Frozen")),
        "broken_json": (text[: len(text) // 2],                     # the upload was cut short
                        {**zero, "reason": "not valid JSON (the file was cut short): nbgrader cannot read it"}, ("Jay", "Json")),
        # nbgrader_config.py sets OverwriteCells.add_missing_cells: the deleted test is put back from the
        # gradebook and run (nbgrader's default would leave it out and score it 0)
        "deleted_test_cell": (deleted, {"reason": "test cell test_pe_forward was deleted; nbgrader put it back "
                                                  "from the gradebook and ran it"}, ("Del", "Deleted")),
        "infinite_loop": (kit.fill(looping), {**zero, "reason": "the first answer cell loops forever: nbgrader "
                                                                "interrupts it after the 30 s cell timeout, the "
                                                                "class is never defined, every test fails"}, ("Lou", "Loop")),
        "cheat_exec": (kit.fill(executing), {**zero, "reason": "executes the text of the reference solution's "
                                                               "source file: the code is identical to the "
                                                               "reference, both cells score 0"}, ("Xena", "Exec")),
    }
